"""The web console's sign-in links and sessions (palui.web). Tokens go in raw and are stored as
SHA-256 hashes: the hash is the one home of that rule, for links and cookies alike.

Using a link is a conditional UPDATE (unused and unexpired, in the same transaction that opens
the session), so a link signs in once, also with two browsers or two processes racing."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update

from palui.db.engine import Database
from palui.db.models import InboxUpdate, WebLink, WebSession


@dataclass(frozen=True, slots=True)
class WebSessionRecord:
    user_id: int
    display: str
    csrf: str
    expires_at: datetime


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class WebRepo:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add_link(self, user_id: int, display: str, now: datetime, ttl: timedelta) -> str:
        """A new one-time sign-in token for the person (only its hash is stored)."""
        token = secrets.token_urlsafe(24)  # 192 random bits
        async with self._db.session() as s, s.begin():
            s.add(
                WebLink(
                    token_hash=token_hash(token),
                    user_id=user_id,
                    display=display,
                    created_at=now,
                    expires_at=now + ttl,
                )
            )
        return token

    async def redeem(self, link: str, now: datetime, session_ttl: timedelta) -> str | None:
        """Use the link once and open a session; the session's cookie token, or None when the
        link is unknown, used or expired (nothing changes then)."""
        cookie = secrets.token_urlsafe(32)
        async with self._db.session() as s, s.begin():
            claimed = await s.execute(
                update(WebLink)
                .where(
                    WebLink.token_hash == token_hash(link),
                    WebLink.used_at.is_(None),
                    WebLink.expires_at > now,
                )
                .values(used_at=now)
            )
            if not getattr(claimed, "rowcount", 0):
                return None
            row = await s.get_one(WebLink, token_hash(link))
            s.add(
                WebSession(
                    token_hash=token_hash(cookie),
                    user_id=row.user_id,
                    display=row.display,
                    csrf=secrets.token_urlsafe(24),
                    created_at=now,
                    expires_at=now + session_ttl,
                )
            )
        return cookie

    async def session(self, cookie: str, now: datetime) -> WebSessionRecord | None:
        """The live session the cookie belongs to (None: unknown, forged, ended or expired)."""
        async with self._db.session() as s:
            row = await s.get(WebSession, token_hash(cookie))
        if row is None or row.expires_at <= now:
            return None
        return WebSessionRecord(row.user_id, row.display, row.csrf, row.expires_at)

    async def end_sessions(self, user_id: int) -> int:
        """End every session of the person (sign out, `/web revoke`); how many there were.
        Unused links go too: revoking means no way back in without a new `/web`."""
        async with self._db.session() as s, s.begin():
            ended = await s.execute(delete(WebSession).where(WebSession.user_id == user_id))
            await s.execute(
                delete(WebLink).where(WebLink.user_id == user_id, WebLink.used_at.is_(None))
            )
        return int(getattr(ended, "rowcount", 0) or 0)

    async def chats_spoken_in(self, user_id: int) -> set[int]:
        """Group chats (negative ids) where Palui stored a message from the person."""
        async with self._db.session() as s:
            rows = await s.scalars(
                select(InboxUpdate.chat_id)
                .where(InboxUpdate.user_id == user_id, InboxUpdate.chat_id < 0)
                .distinct()
            )
            return {chat_id for chat_id in rows if chat_id is not None}
