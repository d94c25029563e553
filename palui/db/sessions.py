"""Chats and their sessions: the open session of each chat, /new's fresh one, and the history a
turn starts from (the session's summary and its latest messages, with where any taint came from)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select, update

from palui.db.models import Chat, ChatSession, MessageRow, Turn, utcnow
from palui.db.repo import Repo
from palui.domain import Message, Role, Taint


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a history message came from (`palui.turns.taint` reads taint from it)."""

    turn_id: str | None
    tainted: bool  # the message came from a tainted turn
    taint: Taint | None = None  # that turn's recorded source, as it was in that turn


@dataclass(frozen=True, slots=True)
class History:
    session_id: int
    summary: str
    summary_tainted: bool
    messages: tuple[Message, ...]
    provenance: tuple[Provenance, ...] = ()  # one per message, in the same order


def _provenance(row: MessageRow, labels: dict[str, str | None]) -> Provenance:
    label = labels.get(row.turn_id) if row.tainted and row.turn_id else None
    return Provenance(row.turn_id, bool(row.tainted), Taint.from_label(label) if label else None)


class ChatRepo(Repo):
    async def current_session(self, chat_id: int, kind: str = "private") -> int:
        """The chat's open session, created (with the chat) on first contact."""
        async with self._db.session() as s, s.begin():
            await s.execute(
                self._insert(Chat)
                .values(id=chat_id, kind=kind, created_at=utcnow())
                .on_conflict_do_nothing(index_elements=["id"])
            )
            chat = await s.get_one(Chat, chat_id, with_for_update=not self._db.is_sqlite)
            if chat.current_session_id is None:
                session = ChatSession(chat_id=chat_id)
                s.add(session)
                await s.flush()
                chat.current_session_id = session.id
            return chat.current_session_id

    async def new_session(self, chat_id: int) -> int:
        async with self._db.session() as s, s.begin():
            chat = await s.get(Chat, chat_id, with_for_update=not self._db.is_sqlite)
            if chat is None:
                chat = Chat(id=chat_id)
                s.add(chat)
            elif chat.current_session_id is not None:
                await s.execute(
                    update(ChatSession)
                    .where(ChatSession.id == chat.current_session_id)
                    .values(closed_at=utcnow())
                )
            session = ChatSession(chat_id=chat_id)
            s.add(session)
            await s.flush()
            chat.current_session_id = session.id
            return session.id

    async def history(self, session_id: int, limit: int, after: int = 0) -> History:
        """The session's summary and its last `limit` messages after message id `after` (what
        the summary covers), oldest first."""
        async with self._db.session() as s:
            session = await s.get_one(ChatSession, session_id)
            rows = list(
                await s.scalars(
                    select(MessageRow)
                    .where(MessageRow.session_id == session_id, MessageRow.id > after)
                    .order_by(MessageRow.id.desc())
                    .limit(limit)
                )
            )
            rows.reverse()
            tainted_turns = {row.turn_id for row in rows if row.tainted and row.turn_id}
            labels: dict[str, str | None] = {}
            if tainted_turns:
                found = await s.execute(
                    select(Turn.id, Turn.taint_source).where(Turn.id.in_(tainted_turns))
                )
                labels = {turn_id: label for turn_id, label in found.all()}
        return History(
            session_id=session_id,
            summary=session.summary,
            summary_tainted=session.summary_tainted,
            messages=tuple(Message(Role(r.role), r.content) for r in rows),
            provenance=tuple(_provenance(r, labels) for r in rows),
        )

    async def persons_words(self, session_id: int, limit: int = 500) -> tuple[str, ...]:
        """The person's own messages of a session, newest `limit`: not replies, not tool output,
        nor anything stored as untrusted (other people's words the person brought)."""
        async with self._db.session() as s:
            rows = await s.scalars(
                select(MessageRow.content)
                .where(
                    MessageRow.session_id == session_id,
                    MessageRow.role == Role.USER,
                    MessageRow.tainted.is_(False),
                )
                .order_by(MessageRow.id.desc())
                .limit(limit)
            )
            return tuple(rows)

    async def session_of(self, turn_id: str) -> int | None:
        async with self._db.session() as s:
            return await s.scalar(select(Turn.session_id).where(Turn.id == turn_id))

    async def count_sessions(self, chat_id: int) -> int:
        async with self._db.session() as s:
            return await s.scalar(select(func.count()).where(ChatSession.chat_id == chat_id)) or 0
