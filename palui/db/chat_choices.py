"""What a person chose for a chat: its model (/model) and whether answers to voice notes are
also spoken (/voice). Kept on the chat's row, so a turn reads them with its own INSERT
(`palui.db.turn_start`) and every process sees the same choice."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Table, select

from palui.db.models import Chat, utcnow
from palui.db.repo import Repo, insert_for

CHATS = cast(Table, Chat.__table__)


class ChatChoiceRepo(Repo):
    async def model(self, chat_id: int) -> str | None:
        """The chat's chosen model (None: the default)."""
        async with self._db.session() as s:
            return await s.scalar(select(CHATS.c.model).where(CHATS.c.id == chat_id))

    async def voice_replies(self, chat_id: int) -> bool:
        async with self._db.session() as s:
            found = await s.scalar(select(CHATS.c.voice_replies).where(CHATS.c.id == chat_id))
        return True if found is None else bool(found)

    async def choose_model(self, chat_id: int, model: str | None) -> None:
        await self._set(chat_id, model=model)

    async def set_voice_replies(self, chat_id: int, on: bool) -> None:
        await self._set(chat_id, voice_replies=on)

    async def _set(self, chat_id: int, **values: Any) -> None:
        """On the chat's row, made (without a session: the first turn opens one) if new."""
        added = insert_for(self._db.is_sqlite)(CHATS).values(
            id=chat_id, created_at=utcnow(), **values
        )
        upsert = added.on_conflict_do_update(index_elements=["id"], set_=values)
        async with self._db.session() as s, s.begin():
            await s.execute(upsert)
