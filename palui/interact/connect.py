"""`/connect <name>` and `/disconnect <name>`: signing a remote MCP connector in with OAuth from
the chat (palui/connectors/signin.py), and the address a person pastes when their browser could
not reach Palui's `/oauth/callback`.

The link goes only to the person's private chat (whoever opens it signs Palui in as themselves)
and is sealed in the stored reply; 🔑 Connect on a connector's card (`connect_from_card`) and
the console's Connect (`start`: the web redirects to the link) start the same sign-in.

A pasted address is consumed here, in whichever process receives it (the sign-in it completes
is a row, maybe of another process's flow): it is never a turn's message (so neither the
history nor the model sees it), its inbox row is marked done, and the message is deleted from
the chat where Telegram allows it. An address of someone else's sign-in is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime
from urllib.parse import parse_qsl, urlsplit

from palui.connectors import ConnectorManager, McpConnector
from palui.connectors.oauth import CALLBACK_PATH, revoke_grant
from palui.connectors.signin import SignIns, Started
from palui.db import Store
from palui.db.oauth import GrantOwner, OAuthGrantRepo
from palui.db.server_questions import ServerQuestionRepo
from palui.domain import ConnectorState, Inbound
from palui.domain.sealed import sealed
from palui.errors import ChannelError, SignInRefused
from palui.interact.questions import QuestionTaps
from palui.logs import get_logger
from palui.ports import Notes

log = get_logger("palui.interact.connect")

PRIVATE_ONLY = (
    "Send /connect to me in our private chat: whoever follows a sign-in link signs Palui in "
    "as themselves."
)
PASTE_HINT = (
    "If your browser can't reach Palui at the end, copy the address it ended on and paste it "
    "here; I'll take it from the chat."
)


class RemoteSignIns:
    """The commands' side of OAuth connectors; also the handler of pasted callback addresses."""

    def __init__(
        self,
        store: Store,
        channel: Notes,
        connectors: ConnectorManager,
        oauth: tuple[SignIns, OAuthGrantRepo] | None,
        *,
        deliver: Callable[[int], None],
        now: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._channel = channel
        self._connectors = connectors
        self._sign_ins: SignIns | None = oauth[0] if oauth is not None else None
        self._grants: OAuthGrantRepo | None = oauth[1] if oauth is not None else None
        # Servers' questions are asked in this channel, each a row (answered in any process).
        connectors.questions.bind(channel, ServerQuestionRepo(store.db), now)
        self.questions = QuestionTaps(store, channel, connectors, deliver)
        self._deliver = deliver
        self._now = now
        self._tasks: set[asyncio.Task[None]] = set()

    async def connect(self, inbound: Inbound) -> str:
        if inbound.chat_id != inbound.user.id:
            return PRIVATE_ONLY
        connector, refusal = self._named(inbound)
        if connector is None:
            return refusal
        return await self.connect_to(connector.id, inbound.user.id)

    async def connect_to(self, connector_id: str, user_id: int) -> str:
        """The reply for the person's private chat: a sign-in link, or why there is none (the
        `/connect` command's, and the connector card's 🔑 Connect)."""
        started = await self.start(connector_id, user_id)
        if isinstance(started, str):
            return started
        return (
            f"Sign in to {connector_id} (the link works once, for 10 minutes):\n"
            f"{sealed(started.link)}\n{PASTE_HINT}"
        )

    async def connect_from_card(self, connector_id: str, chat_id: int, user_id: int) -> str:
        """🔑 Connect on a connector's card: the link goes to the chat (a private one only);
        the tap's toast."""
        if chat_id != user_id:
            name = connector_id.removeprefix("mcp-")
            return f"Use our private chat: send /connect {name} to me there."
        await self._store.outbox.add(chat_id, await self.connect_to(connector_id, user_id))
        self._deliver(chat_id)
        return "Sign-in link sent below."

    async def start(self, connector_id: str, user_id: int) -> Started | str:
        """Start signing `connector_id` in for `user_id` (its end is told in their private
        chat); the sign-in under way, or why not (the web console redirects to its link)."""
        connector = self._connectors.get(connector_id)
        if connector is None or connector.oauth is None or self._sign_ins is None:
            return f"No connector {connector_id.removeprefix('mcp-')} signs in with OAuth."
        if connector.state is ConnectorState.CONNECTED:
            name = connector.id.removeprefix("mcp-")
            return f"{connector.id} is connected. To sign in anew, /disconnect {name} first."
        assert self._grants is not None  # a connector signs in only with a grant store
        owner = GrantOwner(user_id, user_id)  # told in their private chat
        await self._grants.set_owner(connector.id, owner, self._now())
        try:
            started = await self._sign_ins.begin(connector, user_id)
        except SignInRefused as exc:
            return str(exc)
        self._follow(connector.id, user_id, started)
        return started

    async def disconnect(self, inbound: Inbound) -> str:
        connector, refusal = self._named(inbound)
        if connector is None:
            return refusal
        assert self._grants is not None
        revoked = False
        if connector.oauth is not None:
            revoked = await revoke_grant(connector.id, connector.settings, connector.oauth)
        await self._grants.forget(connector.id, self._now())
        connector.retry_now()
        told = " and revoked at the server" if revoked else ""
        return f"Signed out of {connector.id}: its tokens are forgotten{told}."

    async def owns(self, inbound: Inbound, *, asked: bool | None = None) -> bool:
        """A typed answer to a server's question, or a pasted address of Palui's callback from
        someone with a sign-in under way — asked in this process or another, so both are read
        from the database (taps on a server's question are `questions`'s, handed their button
        by the router). `asked`: whether a question waits for this message, if known."""
        if await self.questions.owns(inbound, asked=asked):
            return True
        if self._sign_ins is None or inbound.callback_query_id or inbound.command is not None:
            return False
        query = _callback_query(inbound.text)
        return query is not None and await self._sign_ins.expects(query, inbound.user.id)

    async def handle(self, inbound: Inbound) -> bool:
        if await self.questions.owns(inbound):
            return await self.questions.handle(inbound)
        assert self._sign_ins is not None  # owned: a sign-in is under way
        query = _callback_query(inbound.text) or {}
        await self._store.inbox.mark_done([inbound.update_id])
        if inbound.message_id is not None:
            with contextlib.suppress(ChannelError):
                await self._channel.delete_message(inbound.chat_id, inbound.message_id)
        refused = await self._sign_ins.complete(query, user_id=inbound.user.id)
        text = refused or "Got it, signing in…"
        await self._store.outbox.add(inbound.chat_id, text)
        return False

    async def lapsed(self, connector_id: str) -> None:
        """A grant stopped working: tell its person, once."""
        if self._grants is None:
            return
        owner = await self._grants.lapse(connector_id, self._now())
        if owner is None:
            return
        name = connector_id.removeprefix("mcp-")
        text = f"⚠️ {connector_id} needs you to sign in again: send /connect {name}"
        await self._store.outbox.add(owner.chat_id, text)
        self._deliver(owner.chat_id)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._sign_ins is not None:
            await self._sign_ins.close()

    def _named(self, inbound: Inbound) -> tuple[McpConnector | None, str]:
        words = (inbound.text or "").split()[1:]
        command = f"/{inbound.command}" if inbound.command else "/connect"
        signs_in = [c for c in self._connectors.connectors() if c.oauth is not None]
        names = ", ".join(c.id.removeprefix("mcp-") for c in signs_in) or "none"
        if not words:
            return None, f"Which one? {command} <name>. Connectors that sign in: {names}."
        wanted = words[0].removeprefix("mcp-")
        connector = self._connectors.get(f"mcp-{wanted}")
        if connector is None or connector.oauth is None:
            return None, f"No connector {wanted} signs in with OAuth. Those that do: {names}."
        return connector, ""

    def _follow(self, connector_id: str, chat_id: int, started: Started) -> None:
        async def tell() -> None:
            text = await started.done
            await self._store.outbox.add(chat_id, text)
            self._deliver(chat_id)

        task = asyncio.create_task(tell(), name=f"sign-in result {connector_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _callback_query(text: str | None) -> dict[str, str] | None:
    """The query of a pasted `…/oauth/callback?…` address with a state, else None."""
    words = (text or "").split()
    if len(words) != 1:
        return None
    try:
        parts = urlsplit(words[0])
    except ValueError:
        return None
    if parts.scheme not in {"http", "https"} or not parts.path.endswith(CALLBACK_PATH):
        return None
    query = dict(parse_qsl(parts.query))
    return query if "state" in query else None
