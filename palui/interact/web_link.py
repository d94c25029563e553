"""`/web`: a one-time sign-in link to the web console (palui.web), and `/web revoke`.

The link is sent only in the person's private chat with the bot: in a group anyone reading it
could sign in as them. It works once, for ten minutes; only a hash of its token is stored, and
the reply carrying it keeps the token sealed (`palui.domain.sealed`): once delivered, the stored
reply holds none."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from palui.db import Store
from palui.domain import Inbound
from palui.domain.sealed import sealed

LINK_TTL = timedelta(minutes=10)
PRIVATE_ONLY = (
    "Send /web to me in our private chat: a sign-in link posted in a group could be used by "
    "anyone who reads it."
)


class WebLinks:
    def __init__(
        self, store: Store, *, base_url: Callable[[], str], now: Callable[[], datetime]
    ) -> None:
        self._store = store
        self._base_url = base_url  # PALUI_WEB_URL, else the HTTP server's own address
        self._now = now

    async def reply(self, inbound: Inbound) -> str:
        words = (inbound.text or "").split()[1:]
        if words and words[0].lower() == "revoke":
            ended = await self._store.web.end_sessions(inbound.user.id)
            return f"Signed out of the web console everywhere ({ended} session(s) ended)."
        if inbound.chat_id != inbound.user.id:
            return PRIVATE_ONLY
        token = await self._store.web.add_link(
            inbound.user.id, inbound.user.display, self._now(), LINK_TTL
        )
        url = f"{self._base_url().rstrip('/')}/ui/signin/{sealed(token)}"
        return (
            f"Your sign-in link for the web console (it works once, for 10 minutes):\n{url}\n"
            "Send /web revoke to sign out everywhere."
        )
