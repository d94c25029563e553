"""The inbox: every update is stored before it is handled, once (a redelivery is a no-op), and
marked done in the same transaction as whatever handled it. Which turn took a pending update is
read from its message row (`claimed_by`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy import Table, bindparam, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.engine import Database
from palui.db.models import InboxUpdate, MessageRow, ServerQuestion, Turn, utcnow
from palui.db.repo import DIALECTS, Repo, insert_for
from palui.db.server_questions import QuestionStatus
from palui.domain import InboxItem, InboxStatus, TurnStatus

INBOX = cast(Table, InboxUpdate.__table__)
_STORED = ("update_id", "chat_id", "user_id", "payload", "status", "received_at")

# Built once, run with params: a statement built per call costs several times its run in
# SQLAlchemy's CPU (palui.db.leases). The inbox's INSERT, one per dialect (ON CONFLICT).
_ADD = {
    is_sqlite: insert_for(is_sqlite)(INBOX)
    .values({k: bindparam(k) for k in _STORED})
    .on_conflict_do_nothing(index_elements=["update_id"])
    for is_sqlite in DIALECTS
}
# The same INSERT, answering whether a turn of the chat is running now, in any process: a
# message stored meanwhile waits for the next turn (its 👀 comes from whoever stored it).
_TURNS = cast(Table, Turn.__table__)
_RUNNING = (
    exists()
    .where(_TURNS.c.chat_id == bindparam("chat_id"), _TURNS.c.status == TurnStatus.RUNNING)
    .label("running")
)
# And whether a server's question waits for this person's next message in this chat (in any
# process): the message is then its answer (palui.interact.questions). Read here, it costs the
# intake no query of its own.
_QUESTIONS = cast(Table, ServerQuestion.__table__)
_ASKED = (
    exists()
    .where(
        _QUESTIONS.c.status == QuestionStatus.OPEN,
        _QUESTIONS.c.chat_id == bindparam("chat_id"),
        _QUESTIONS.c.user_id == bindparam("user_id"),
        _QUESTIONS.c.typed_field.is_not(None),
        _QUESTIONS.c.expires_at > bindparam("received_at"),
    )
    .label("asked")
)
_ADD_SEEING = {is_sqlite: _ADD[is_sqlite].returning(_RUNNING, _ASKED) for is_sqlite in DIALECTS}


class Seen(NamedTuple):
    """What the INSERT of a new update saw."""

    running: bool  # a turn of the chat runs now (in any process)
    asked: bool  # a server's question waits for this person's next message in this chat


_DONE = (
    update(INBOX)
    .where(INBOX.c.update_id.in_(bindparam("update_ids", expanding=True)))
    .values(
        status=InboxStatus.DONE, handled_at=bindparam("handled_at"), turn_id=bindparam("turn_id")
    )
)
# One more attempt at handling these updates, written before the attempt (palui.chat.attempts).
_ATTEMPT = (
    update(INBOX)
    .where(INBOX.c.update_id.in_(bindparam("update_ids", expanding=True)))
    .values(attempts=INBOX.c.attempts + 1)
)
# An orderly stop interrupted the attempt: it was no failure (never below zero).
_UNCOUNT = (
    update(INBOX)
    .where(INBOX.c.update_id.in_(bindparam("update_ids", expanding=True)), INBOX.c.attempts > 0)
    .values(attempts=INBOX.c.attempts - 1)
)


class InboxRepo(Repo):
    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._add = _ADD[db.is_sqlite]

    async def add(
        self, update_id: int, chat_id: int | None, user_id: int | None, payload: dict
    ) -> bool:
        """Store an update; False when it was already there (a redelivery)."""
        row = {
            "update_id": update_id,
            "chat_id": chat_id,
            "user_id": user_id,
            "payload": json.dumps(payload, separators=(",", ":")),
            "status": InboxStatus.PENDING,
            "received_at": utcnow(),
        }
        async with self._db.session() as s, s.begin():
            result = await s.execute(self._add, row)
        return bool(getattr(result, "rowcount", 0))

    async def add_seeing(
        self, update_id: int, chat_id: int | None, user_id: int | None, payload: dict
    ) -> Seen | None:
        """`add`, in the same statement: whether a turn of the chat runs now (in any process)
        and whether a question waits for the person's next message; None when the update was
        already stored (a redelivery)."""
        row = {
            "update_id": update_id,
            "chat_id": chat_id,
            "user_id": user_id,
            "payload": json.dumps(payload, separators=(",", ":")),
            "status": InboxStatus.PENDING,
            "received_at": utcnow(),
        }
        async with self._db.session() as s, s.begin():
            found = (await s.execute(_ADD_SEEING[self._db.is_sqlite], row)).first()
        return None if found is None else Seen(bool(found[0]), bool(found[1]))

    async def pending(self, chat_id: int | None = None) -> list[InboxItem]:
        """The updates not handled yet, each with the turn that took it, if one did."""
        query = select(InboxUpdate, claimed_by(InboxUpdate.update_id)).where(
            InboxUpdate.status == InboxStatus.PENDING
        )
        if chat_id is not None:
            query = query.where(InboxUpdate.chat_id == chat_id)
        async with self._db.session() as s:
            rows = await s.execute(query.order_by(InboxUpdate.update_id))
            return [_inbox_item(row, turn_id) for row, turn_id in rows]

    async def count_attempt(self, update_ids: Sequence[int]) -> None:
        """An attempt at these updates starts now (committed first: a kill -9 in it counts)."""
        if update_ids:
            async with self._db.session() as s, s.begin():
                await count_attempt(s, update_ids)

    async def uncount_attempt(self, update_ids: Sequence[int]) -> None:
        """The attempt at these updates was stopped in order (a shutdown): it does not count."""
        if update_ids:
            async with self._db.session() as s, s.begin():
                await s.execute(_UNCOUNT, {"update_ids": list(update_ids)})

    async def mark_done(self, update_ids: Sequence[int], turn_id: str | None = None) -> None:
        if not update_ids:
            return
        async with self._db.session() as s, s.begin():
            await mark_inbox_done(s, update_ids, turn_id)


def _inbox_item(row: InboxUpdate, turn_id: str | None) -> InboxItem:
    payload = json.loads(row.payload)
    return InboxItem(row.update_id, row.chat_id, row.user_id, payload, turn_id, row.attempts)


async def count_attempt(s: AsyncSession, update_ids: Sequence[int]) -> None:
    """In the caller's transaction (a chat turn's start counts its own)."""
    await s.execute(_ATTEMPT, {"update_ids": list(update_ids)})


def claimed_by(update_id: Any) -> Any:
    """The turn that last took an update (None: none yet), as a scalar subquery.

    A turn's start claims its inbox rows with no statement of its own: the update's message
    row (unique by `update_id`) names the turn that took it last, and a re-run's start makes it
    name the re-run. The inbox row names its turn only once it is done (`mark_inbox_done`). So
    a pending update with a claim was taken by a turn that never ended (it was interrupted):
    its messages run again (`rerun`), and that turn's preview is taken over."""
    return (
        select(MessageRow.turn_id)
        .where(MessageRow.update_id == update_id)
        .limit(1)
        .scalar_subquery()
    )


async def uncount_inbox(s: AsyncSession, update_ids: Sequence[int]) -> None:
    """Take back one attempt at these updates, in the caller's transaction."""
    await s.execute(_UNCOUNT, {"update_ids": list(update_ids)})


async def mark_inbox_done(s: AsyncSession, update_ids: Sequence[int], turn_id: str | None) -> None:
    params = {"update_ids": list(update_ids), "handled_at": utcnow(), "turn_id": turn_id}
    await s.execute(_DONE, params)
