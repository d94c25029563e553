"""Chats and their sessions: the open session of each chat, /new's fresh one, and the history a
turn starts from (the session's summary and its latest messages, with where any taint came from)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, bindparam, func, select, true, update
from sqlalchemy.exc import NoResultFound
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.models import Chat, ChatSession, MemorySlice, MessageRow, Turn, utcnow
from palui.db.repo import Repo
from palui.domain import Message, Role, SliceReason, Taint


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a history message came from (`palui.turns.starting_taint` reads taint from it)."""

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


def _provenance(row: Any, labels: dict[str, str | None]) -> Provenance:
    label = labels.get(row.turn_id) if row.tainted and row.turn_id else None
    return Provenance(row.turn_id, bool(row.tainted), Taint.from_label(label) if label else None)


def compacted_through(session_id: Any) -> Any:
    """The last message id the session's summary covers (0: no summary yet), as a subquery."""
    slices = MemorySlice.__table__.c
    return (
        select(func.coalesce(func.max(slices.last_message_id), 0))
        .where(
            slices.session_id == session_id,
            slices.reason == SliceReason.COMPACTION,
            slices.summarised.is_(True),
        )
        .scalar_subquery()
    )


def _history(after_summary: bool) -> Any:
    """The history read, built once (a turn binds `session_id`, `limit` and `after`): the
    session's row LEFT JOIN its newest messages (a subquery, so the limit counts messages).
    Against the tables: a Core statement skips the ORM's execution path."""
    session_id = bindparam("session_id", type_=Integer)
    since = compacted_through(session_id) if after_summary else bindparam("after", type_=Integer)
    m, turns, sessions = MessageRow.__table__.c, Turn.__table__.c, ChatSession.__table__
    messages = (
        select(m.id, m.role, m.content, m.turn_id, m.tainted, m.author, turns.taint_source)
        .outerjoin(Turn.__table__, turns.id == m.turn_id)
        .where(m.session_id == session_id, m.id > since)
        .order_by(m.id.desc())
        .limit(bindparam("limit", type_=Integer))
        .subquery()
    )
    return (
        select(sessions.c.summary, sessions.c.summary_tainted, messages)
        .select_from(sessions)
        .outerjoin(messages, true())
        .where(sessions.c.id == session_id)
    )


_HISTORY = _history(after_summary=False)
_HISTORY_AFTER_SUMMARY = _history(after_summary=True)
_CHATS = Chat.__table__.c
_OPEN_SESSION = select(_CHATS.current_session_id).where(
    _CHATS.id == bindparam("chat_id", type_=_CHATS.id.type)
)


async def open_session(
    s: AsyncSession, chat_id: int, insert: Any, kind: str = "private", *, lock: bool = False
) -> int:
    """In the caller's transaction: the chat's open session, created (with the chat) on first
    contact. One SELECT once the chat has one."""
    found = await s.scalar(_OPEN_SESSION, {"chat_id": chat_id})
    if found is not None:
        return found
    await s.execute(
        insert(Chat)
        .values(id=chat_id, kind=kind, created_at=utcnow())
        .on_conflict_do_nothing(index_elements=["id"])
    )
    chat = await s.get_one(Chat, chat_id, with_for_update=lock, populate_existing=True)
    if chat.current_session_id is None:
        session = ChatSession(chat_id=chat_id)
        s.add(session)
        await s.flush()
        chat.current_session_id = session.id
    return chat.current_session_id


class ChatRepo(Repo):
    async def current_session(self, chat_id: int, kind: str = "private") -> int:
        """The chat's open session, created (with the chat) on first contact."""
        async with self._db.session() as s:
            found = await s.scalar(_OPEN_SESSION, {"chat_id": chat_id})
        if found is not None:
            return found  # the usual case: a read, no write transaction
        async with self._db.session() as s, s.begin():
            return await open_session(s, chat_id, self._insert, kind, lock=not self._db.is_sqlite)

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

    async def history(
        self, session_id: int, limit: int, after: int = 0, *, after_summary: bool = False
    ) -> History:
        """The session's summary and its last `limit` messages after message id `after` (what
        the summary covers; `after_summary`: whatever its compaction slices cover), oldest
        first. One read: the session's row, joined to its messages with their turns' taint
        sources (a session with none gives one row with no message)."""
        query = _HISTORY_AFTER_SUMMARY if after_summary else _HISTORY
        params = {"session_id": session_id, "limit": limit}
        if not after_summary:
            params["after"] = after
        async with self._db.session() as s:
            found = list((await s.execute(query, params)).all())
        if not found:
            raise NoResultFound(f"no session {session_id}")
        head = found[0]
        rows = sorted((r for r in found if r.id is not None), key=lambda r: r.id)
        labels = {r.turn_id: r.taint_source for r in rows if r.tainted and r.turn_id}
        return History(
            session_id=session_id,
            summary=head.summary,
            summary_tainted=head.summary_tainted,
            messages=tuple(Message(Role(r.role), r.content, name=r.author) for r in rows),
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
