"""Remote connectors' OAuth grants (`oauth_grants`): tokens and client registrations sealed with
a `SecretBox`, so the database file never holds them in the clear; they leave this module only
as the JSON the MCP SDK's token storage reads.

A refresh is done under the row's lease (`take_refresh`, a conditional UPDATE), so with two
processes only one spends a rotating refresh token; the other waits and reads what it stored.
A grant that lapsed (its refresh refused) is told to its person once: `lapse` flips
`lapsed_told` in the same UPDATE that drops the tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update

from palui.db.engine import Database
from palui.db.models import OAuthGrant
from palui.db.sealing import SecretBox


@dataclass(frozen=True, slots=True)
class GrantOwner:
    """Who signed a connector in, and where they asked."""

    user_id: int
    chat_id: int


class OAuthGrantRepo:
    def __init__(self, db: Database, box: SecretBox) -> None:
        self._db = db
        self._box = box

    async def tokens(self, connector_id: str) -> str | None:
        row = await self._row(connector_id)
        return self._box.open(row.tokens) if row is not None and row.tokens else None

    async def client(self, connector_id: str) -> str | None:
        row = await self._row(connector_id)
        return self._box.open(row.client) if row is not None and row.client else None

    async def owner(self, connector_id: str) -> GrantOwner | None:
        row = await self._row(connector_id)
        if row is None or row.user_id is None or row.chat_id is None:
            return None
        return GrantOwner(row.user_id, row.chat_id)

    async def save_tokens(self, connector_id: str, tokens: str, now: datetime) -> None:
        await self._write(connector_id, now, tokens=self._box.seal(tokens), lapsed_told=False)

    async def save_client(self, connector_id: str, client: str, now: datetime) -> None:
        await self._write(connector_id, now, client=self._box.seal(client))

    async def set_owner(self, connector_id: str, owner: GrantOwner, now: datetime) -> None:
        await self._write(connector_id, now, user_id=owner.user_id, chat_id=owner.chat_id)

    async def forget(self, connector_id: str, now: datetime) -> None:
        """Drop the tokens (the client registration stays: a new sign-in reuses it)."""
        await self._write(connector_id, now, tokens=None)

    async def lapse(self, connector_id: str, now: datetime) -> GrantOwner | None:
        """Drop the tokens of a grant its server refused; its owner the first time only."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(OAuthGrant)
                .where(OAuthGrant.connector_id == connector_id, OAuthGrant.lapsed_told.is_(False))
                .values(tokens=None, lapsed_told=True, updated_at=now)
                .returning(OAuthGrant.user_id, OAuthGrant.chat_id)
            )
            row = result.first()
        if row is None or row.user_id is None or row.chat_id is None:
            return None
        return GrantOwner(row.user_id, row.chat_id)

    async def take_refresh(
        self, connector_id: str, holder: str, now: datetime, ttl: timedelta
    ) -> bool:
        """The refresh lease, when nobody else holds a live one."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(OAuthGrant)
                .where(
                    OAuthGrant.connector_id == connector_id,
                    or_(
                        OAuthGrant.refresh_until.is_(None),
                        OAuthGrant.refresh_until <= now,
                        OAuthGrant.refresh_holder == holder,
                    ),
                )
                .values(refresh_holder=holder, refresh_until=now + ttl)
                .returning(OAuthGrant.connector_id)
            )
            return result.first() is not None

    async def release_refresh(self, connector_id: str, holder: str) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(OAuthGrant)
                .where(OAuthGrant.connector_id == connector_id, OAuthGrant.refresh_holder == holder)
                .values(refresh_holder=None, refresh_until=None)
            )

    async def _row(self, connector_id: str) -> OAuthGrant | None:
        async with self._db.session() as s:
            return (
                await s.execute(select(OAuthGrant).where(OAuthGrant.connector_id == connector_id))
            ).scalar_one_or_none()

    async def _write(self, connector_id: str, now: datetime, **values: object) -> None:
        async with self._db.session() as s, s.begin():
            row = await s.get(OAuthGrant, connector_id)
            if row is None:
                row = OAuthGrant(connector_id=connector_id, lapsed_told=False)
                s.add(row)
            for name, value in values.items():
                setattr(row, name, value)
            row.updated_at = now
