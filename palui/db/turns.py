"""Turns: one row per turn from start to end; its end writes the reply into history and the
outbox and marks its inbox done in one transaction. Also each model call's token usage (the caps
and /status add these up)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, cast

from sqlalchemy import Table, bindparam, delete, func, insert, select, update
from sqlalchemy.exc import NoResultFound
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Update

from palui.db.inbox import count_attempt, mark_inbox_done, uncount_inbox
from palui.db.leases import fence_params, held_by_params
from palui.db.models import (
    JobRun,
    MessageRow,
    OutboxMessage,
    PausedTurn,
    Turn,
    WebhookDelivery,
    utcnow,
)
from palui.db.repo import Repo, insert_params
from palui.db.riders import MODEL_CALLS, Riders, ride, usage_row
from palui.db.turn_start import left_unrecorded, start_turn
from palui.domain import (
    Completion,
    OutboxItem,
    Role,
    RunStatus,
    TurnKind,
    UnrecordedPreview,
)
from palui.domain.turn_record import TurnEnd, TurnStart
from palui.errors import LeaseLost

TURNS = cast(Table, Turn.__table__)
MESSAGES = cast(Table, MessageRow.__table__)
OUTBOX = cast(Table, OutboxMessage.__table__)
PAUSED = cast(Table, PausedTurn.__table__)
RUNS = cast(Table, JobRun.__table__)
DELIVERIES = cast(Table, WebhookDelivery.__table__)
_WAITING = OUTBOX.alias("waiting")


def _ending(fenced: bool, tainted: bool) -> Update:
    """A turn's end: its row's UPDATE, conditional on its fence, adding a taint."""
    values: dict[str, Any] = {k: bindparam(k) for k in ("status", "steps", "budget_hit", "error")}
    values["ended_at"] = bindparam("ended_at")
    if tainted:
        label = bindparam("taint_label", type_=TURNS.c.taint_source.type)
        values.update(tainted=True, taint_source=func.coalesce(TURNS.c.taint_source, label))
    # Folded into the turn's own UPDATE: a stale holder's end changes nothing.
    fence = [held_by_params()] if fenced else []
    return (
        update(TURNS)
        .where(TURNS.c.id == bindparam("turn_id"), *fence)
        .values(values)
        .returning(
            TURNS.c.session_id,
            TURNS.c.chat_id,
            TURNS.c.tainted,
            TURNS.c.reply_to,
            TURNS.c.voice,
            TURNS.c.kind,
        )
    )


# Built once, run with a dict of values: a statement built per call costs several times its
# run in SQLAlchemy's CPU (palui.db.leases).
_ENDINGS = {(f, t): _ending(f, t) for f in (False, True) for t in (False, True)}
_REMEMBER = insert_params(
    MESSAGES, ("session_id", "chat_id", "role", "content", "turn_id", "tainted", "created_at")
)
# Along with the reply: the chat's oldest reply still waiting (PostgreSQL reads it as it was
# before this INSERT, SQLite may count this row too: either way "none older").
_FIRST_WAITING = (
    select(func.min(_WAITING.c.id))
    .where(_WAITING.c.chat_id == bindparam("chat_id"), _WAITING.c.sent_at.is_(None))
    .scalar_subquery()
)
_STORE_REPLY = insert_params(
    OUTBOX,
    (
        "chat_id",
        "text",
        "turn_id",
        "parts_sent",
        "edit_message_id",
        "reply_to",
        "created_at",
        "sender",
        "voice",
    ),
).returning(OUTBOX.c.id, _FIRST_WAITING)
# A job's run whose turn waits for the model goes back to queued: the unique run row is kept,
# and queued -> started is conditional, so it starts once more, once (palui.db.jobs).
_REQUEUE_RUN = (
    update(RUNS)
    .where(RUNS.c.turn_id == bindparam("ended_turn"), RUNS.c.status == RunStatus.STARTED)
    .values(status=RunStatus.QUEUED, turn_id=None, started_at=None)
)
# In the turn's own transaction: a crash after the end cannot summarise the delivery again.
_DELIVERY_HANDLED = (
    update(DELIVERIES)
    .where(DELIVERIES.c.turn_id == bindparam("ended_turn"), DELIVERIES.c.handled_at.is_(None))
    .values(handled_at=bindparam("handled_at"))
)
# A summary that waits for the model was no failed attempt (palui.chat.attempts): not counted.
_DELIVERY_WAITS = (
    update(DELIVERIES)
    .where(DELIVERIES.c.turn_id == bindparam("ended_turn"), DELIVERIES.c.attempts > 0)
    .values(attempts=DELIVERIES.c.attempts - 1)
)
_UNPAUSE = delete(PAUSED).where(PAUSED.c.turn_id == bindparam("turn_id"))
_PREVIEW_GOING_OUT = (
    update(TURNS)
    .where(TURNS.c.id == bindparam("turn_id"))
    .values(preview_floor=bindparam("preview_floor"), preview_text=bindparam("preview_text"))
)
_RECORD_PREVIEW = (
    update(TURNS)
    .where(TURNS.c.id == bindparam("turn_id"))
    .values(preview_message_id=bindparam("preview_message_id"))
)
# An interrupted turn's unrecorded preview looked for and not there: nothing for a re-run.
_NO_PREVIEW = (
    update(TURNS)
    .where(TURNS.c.id == bindparam("turn_id"))
    .values(preview_floor=None, preview_text=None)
)
_MODEL_CALL = insert(MODEL_CALLS)
# The caps' reads, before each turn when they are on.
_TOKENS_SINCE = select(func.coalesce(func.sum(MODEL_CALLS.c.total_tokens), 0)).where(
    MODEL_CALLS.c.created_at >= bindparam("since")
)
_RUNS_SINCE = select(func.count()).where(TURNS.c.started_at >= bindparam("since"))
_OLDEST_RUN_SINCE = select(func.min(TURNS.c.started_at)).where(
    TURNS.c.started_at >= bindparam("since")
)


@dataclasses.dataclass(frozen=True, slots=True)
class Ended:
    """The reply a turn's end stored in the outbox."""

    item: OutboxItem
    # No earlier reply of the chat waits in the outbox (read by the reply's own INSERT): its
    # sender can deliver this one as it is, without reading the outbox.
    alone: bool


class ChatTurnStart(NamedTuple):
    session_id: int
    preview: int | None  # the preview it takes over
    unrecorded: UnrecordedPreview | None  # else one an interrupted turn sent with no id
    model: str | None  # the chat's chosen model (None: the default)
    voice: bool  # its answer is also spoken


class TurnRepo(Repo):
    async def start(self, start: TurnStart) -> int | None:
        """Record a running turn and add the person's messages (once per update) to history
        (`palui.domain.turn_record.TurnStart`), in the session it names.

        Returns the preview message it takes over: one that an interrupted earlier turn for the
        same messages left in the chat (the new turn's answer is then shown in it)."""
        async with self._db.session() as s, s.begin():
            left = await start_turn(s, start, self._db.is_sqlite)
        return left.message_id

    async def start_chat_turn(
        self,
        start: TurnStart,
        *,
        chat_kind: str = "private",
        rerun: bool = True,
        attempted: Sequence[int] = (),
    ) -> ChatTurnStart:
        """`start` for a chat turn, in the same one transaction as finding the chat's open
        session (created on first contact): (the session, the preview it takes over, or else
        the preview an interrupted turn was sending with no id recorded: the new turn inherits
        it, so a crash while it looks for it leaves it to the next re-run).
        `rerun=False`: no earlier turn took these messages, so none left a preview.
        `attempted`: the updates whose attempt this start counts (`palui.chat.attempts`).
        `voice`: it answers a voice note (spoken too if the chat has /voice on); `authors`: a
        group's messages' writers, by update."""
        async with self._db.session() as s, s.begin():
            # The session is read by the turn's own INSERT (from the chat's row); only a chat
            # without one yet (first contact), or a lost lease, gets the long way.
            left = await start_turn(
                s,
                start,
                self._db.is_sqlite,
                rerun=rerun,
                chat_kind=chat_kind,
                lock=not self._db.is_sqlite,
            )
            if attempted:
                await count_attempt(s, attempted)
        assert left.session_id is not None
        return ChatTurnStart(
            left.session_id, left.message_id, left.unrecorded, left.model, left.voice
        )

    async def preview_going_out(self, turn_id: str, floor: int, text: str) -> None:
        """The turn's first preview is about to be sent (only a turn slower than the first
        preview's hold gets here): where a re-run looks for it if its id is never recorded."""
        params = {"turn_id": turn_id, "preview_floor": floor, "preview_text": text}
        async with self._db.session() as s, s.begin():
            await s.execute(_PREVIEW_GOING_OUT, params)

    async def record_preview(self, turn_id: str, message_id: int) -> None:
        """The turn's streamed preview was just sent: remember it before anything else happens,
        so a crash leaves a message the re-run can find."""
        params = {"turn_id": turn_id, "preview_message_id": message_id}
        async with self._db.session() as s, s.begin():
            await s.execute(_RECORD_PREVIEW, params)

    async def unrecorded_preview(
        self, chat_id: int, update_ids: Sequence[int]
    ) -> tuple[str, UnrecordedPreview] | None:
        """The preview an interrupted turn for these updates may have left with no id recorded,
        and that turn's id: for a re-run to look for before it starts."""
        async with self._db.session() as s:
            return await left_unrecorded(s, chat_id, update_ids)

    async def settle_preview(self, turn_id: str, message_id: int | None) -> None:
        """The interrupted turn's preview was looked for: found (`message_id`, recorded as its
        preview, which the re-run's start takes over) or not there (nothing left to take)."""
        async with self._db.session() as s, s.begin():
            if message_id is None:
                await s.execute(_NO_PREVIEW, {"turn_id": turn_id})
            else:
                params = {"turn_id": turn_id, "preview_message_id": message_id}
                await s.execute(_RECORD_PREVIEW, params)

    async def finish(self, end: TurnEnd, riders: Riders | None = None) -> Ended | None:
        """End a turn in one transaction (`palui.domain.turn_record.TurnEnd`), with the
        bookkeeping it still owes (`riders`). Returns the reply's outbox row (None: no reply)."""
        async with self._db.session() as s, s.begin():
            return await _finish(s, end, riders)

    async def write_riders(self, riders: Riders) -> None:
        """What a turn owes that found no transaction to ride on (it stopped mid-way)."""
        if riders:
            async with self._db.session() as s, s.begin():
                await ride(s, riders)

    async def record_model_call(
        self, turn_id: str | None, chat_id: int | None, completion: Completion, latency_s: float
    ) -> None:
        """A model call outside a turn (compaction) or the caller's own: a transaction."""
        async with self._db.session() as s, s.begin():
            await s.execute(_MODEL_CALL, usage_row(turn_id, chat_id, completion, latency_s))

    async def tokens_since(self, since: datetime) -> int:
        async with self._db.session() as s:
            total = await s.scalar(_TOKENS_SINCE, {"since": since})
        return int(total or 0)

    async def oldest_run_since(self, since: datetime) -> datetime | None:
        async with self._db.session() as s:
            return await s.scalar(_OLDEST_RUN_SINCE, {"since": since})

    async def runs_since(self, since: datetime) -> int:
        async with self._db.session() as s:
            count = await s.scalar(_RUNS_SINCE, {"since": since})
        return int(count or 0)

    async def requester(self, turn_id: str) -> int | None:
        """The person whose message started the turn (None: a job, a webhook, or a turn from
        before this was recorded)."""
        async with self._db.session() as s:
            return await s.scalar(select(Turn.requester_id).where(Turn.id == turn_id))

    async def reply_to(self, turn_id: str) -> int | None:
        """The message the turn's answer (and cards) are threaded to (a group's turn)."""
        async with self._db.session() as s:
            return await s.scalar(select(Turn.reply_to).where(Turn.id == turn_id))

    async def requester_and_model(self, turn_id: str) -> tuple[int | None, str | None]:
        """`requester`, and the model the turn asks (None: the default)."""
        async with self._db.session() as s:
            row = (
                await s.execute(select(Turn.requester_id, Turn.model).where(Turn.id == turn_id))
            ).one_or_none()
        return (None, None) if row is None else (row[0], row[1])

    async def kind_and_taint(self, turn_id: str) -> tuple[TurnKind, bool] | None:
        """A turn's kind and whether it is tainted so far (None for an unknown turn)."""
        async with self._db.session() as s:
            turn = await s.get(Turn, turn_id)
        return None if turn is None else (TurnKind(turn.kind), bool(turn.tainted))


async def _finish(s: AsyncSession, end: TurnEnd, riders: Riders | None) -> Ended | None:
    """The turn's end, one statement per row it touches (each can carry a lease fence)."""
    turn_id, reply, taint, fence = end.turn_id, end.reply, end.taint, end.fence
    preview_message_id = end.preview_message_id
    values: dict[str, Any] = {
        "turn_id": turn_id,
        "status": end.status,
        "ended_at": utcnow(),
        "steps": end.steps,
        "budget_hit": end.budget_hit,
        "error": end.error,
    }
    if taint is not None:
        values["taint_label"] = taint.label
    if fence is not None:
        values.update(fence_params(fence))
    ending = _ENDINGS[fence is not None, taint is not None]
    ended = (await s.execute(ending, values)).one_or_none()
    if ended is None:
        if fence is not None:
            raise LeaseLost(fence.chat_id)
        raise NoResultFound(f"no turn {turn_id}")
    stored: Ended | None = None
    if reply is not None:
        if end.remember:
            await s.execute(
                _REMEMBER,
                {
                    "session_id": ended.session_id,
                    "chat_id": ended.chat_id,
                    "role": Role.ASSISTANT,
                    "content": reply,
                    "turn_id": turn_id,
                    "tainted": bool(ended.tainted),
                    "created_at": utcnow(),
                },
            )
        created_at, sender = utcnow(), fence.holder if fence is not None else None
        added = await s.execute(
            _STORE_REPLY,
            {
                "chat_id": ended.chat_id,
                "text": reply,
                "turn_id": turn_id,
                "parts_sent": 0,
                "edit_message_id": preview_message_id,
                "reply_to": ended.reply_to,
                "created_at": created_at,
                "sender": sender,
                "voice": bool(ended.voice),
            },
        )
        outbox_id, first = added.one()
        item = OutboxItem(
            int(outbox_id),
            ended.chat_id,
            reply,
            0,
            preview_message_id,
            ended.reply_to,
            created_at=created_at,
            sender=sender,
            voice=bool(ended.voice),
        )
        stored = Ended(item, alone=first is None or int(first) == item.id)
    if end.update_ids:
        await mark_inbox_done(s, end.update_ids, turn_id)
    else:
        # A resumed turn (its messages were handled when it paused) is no longer paused; a
        # chat turn's messages are never a paused turn's, so it skips this statement.
        await s.execute(_UNPAUSE, {"turn_id": turn_id})
    if end.waits and end.kept:
        await uncount_inbox(s, end.kept)
    if ended.kind == TurnKind.SCHEDULED and end.waits:
        await s.execute(_REQUEUE_RUN, {"ended_turn": turn_id})
    elif ended.kind == TurnKind.WEBHOOK:
        if end.waits:
            await s.execute(_DELIVERY_WAITS, {"ended_turn": turn_id})
        else:
            await s.execute(_DELIVERY_HANDLED, {"ended_turn": turn_id, "handled_at": utcnow()})
    await ride(s, riders)
    return stored
