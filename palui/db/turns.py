"""Turns: one row per turn from start to end; its end writes the reply into history and the
outbox and marks its inbox done in one transaction. Also each model call's token usage (the caps
and /status add these up)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, literal, or_, select, update
from sqlalchemy.exc import NoResultFound
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.inbox import mark_inbox_done
from palui.db.leases import fenced_insert, held_by
from palui.db.models import (
    Chat,
    InboxUpdate,
    MessageRow,
    ModelCall,
    OutboxMessage,
    PausedTurn,
    Turn,
    utcnow,
)
from palui.db.repo import Repo
from palui.db.riders import Riders, ride, usage_row
from palui.db.sessions import open_session
from palui.domain import (
    Completion,
    Fence,
    Role,
    Taint,
    TurnKind,
    TurnStatus,
    UnrecordedPreview,
)
from palui.errors import LeaseLost

TURN_COLUMNS = Turn.__table__.columns


class TurnRepo(Repo):
    async def start(
        self,
        turn_id: str,
        chat_id: int,
        session_id: int,
        kind: TurnKind,
        inputs: Sequence[tuple[int, str]],
        *,
        untrusted: Mapping[int, Sequence[str]] | None = None,
        taint: Taint | None = None,
        requester_id: int | None = None,
        reply_to: int | None = None,
        fence: Fence | None = None,
    ) -> int | None:
        """Record a running turn and add the person's messages (once per update) to history.

        `untrusted`: per update, someone else's words in it (already fenced), stored as tainted
        messages before the person's own; `taint` is then the turn's starting taint, recorded
        now so later turns name it even if this one never ends. `requester_id`: whose message
        started the turn (a group's `[groups] approver = "requester"`); `reply_to`: the message
        its answer is threaded to. Under a `fence` (the chat lease the turn runs under) nothing is
        written once another process took the lease over: `LeaseLost`.

        Returns the preview message it takes over: one that an interrupted earlier turn for the
        same messages left in the chat (the new turn's answer is then shown in it)."""
        async with self._db.session() as s, s.begin():
            left = await _start(
                s, turn_id, chat_id, session_id, kind, inputs, self._insert,
                untrusted=untrusted or {}, taint=taint, requester_id=requester_id,
                reply_to=reply_to, fence=fence,
            )  # fmt: skip
        return left.message_id

    async def start_chat_turn(
        self,
        turn_id: str,
        chat_id: int,
        inputs: Sequence[tuple[int, str]],
        *,
        chat_kind: str = "private",
        rerun: bool = True,
        untrusted: Mapping[int, Sequence[str]] | None = None,
        taint: Taint | None = None,
        requester_id: int | None = None,
        reply_to: int | None = None,
        fence: Fence | None = None,
    ) -> tuple[int, int | None, UnrecordedPreview | None]:
        """`start` for a chat turn, in the same one transaction as finding the chat's open
        session (created on first contact): (the session, the preview it takes over, or else
        the preview an interrupted turn was sending with no id recorded: the new turn inherits
        it, so a crash while it looks for it leaves it to the next re-run).
        `rerun=False`: no earlier turn took these messages, so none left a preview."""
        async with self._db.session() as s, s.begin():
            # The session is read by the turn's own INSERT (from the chat's row); only a chat
            # without one yet (first contact), or a lost lease, gets the long way.
            left = await _start(
                s, turn_id, chat_id, None, TurnKind.CHAT, inputs, self._insert,
                rerun=rerun, untrusted=untrusted or {}, taint=taint, requester_id=requester_id,
                reply_to=reply_to, fence=fence, chat_kind=chat_kind,
                lock=not self._db.is_sqlite,
            )  # fmt: skip
        assert left.session_id is not None
        return left.session_id, left.message_id, left.unrecorded

    async def preview_going_out(self, turn_id: str, floor: int, text: str) -> None:
        """The turn's first preview is about to be sent (only a turn slower than the first
        preview's hold gets here): where a re-run looks for it if its id is never recorded."""
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(Turn)
                .where(Turn.id == turn_id)
                .values(preview_floor=floor, preview_text=text)
            )

    async def record_preview(self, turn_id: str, message_id: int) -> None:
        """The turn's streamed preview was just sent: remember it before anything else happens,
        so a crash leaves a message the re-run can find."""
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(Turn).where(Turn.id == turn_id).values(preview_message_id=message_id)
            )

    async def finish(
        self,
        turn_id: str,
        status: TurnStatus,
        *,
        update_ids: Sequence[int],
        reply: str | None = None,
        remember: bool = True,
        steps: int = 0,
        budget_hit: str | None = None,
        error: str | None = None,
        taint: Taint | None = None,
        preview_message_id: int | None = None,
        fence: Fence | None = None,
        riders: Riders | None = None,
    ) -> int | None:
        """End a turn in one transaction: its reply into history and the outbox, inbox done,
        and the bookkeeping it still owes (`riders`).

        `preview_message_id`: the reply's first part is delivered as an edit of that message
        (the turn's streamed preview). Under a `fence` (the chat lease the turn runs under)
        nothing is written once another process took the lease over: `LeaseLost`. Returns the
        reply's outbox id."""
        async with self._db.session() as s, s.begin():
            return await _finish(
                s, turn_id, status, update_ids=update_ids, reply=reply, remember=remember,
                steps=steps, budget_hit=budget_hit, error=error, taint=taint,
                preview_message_id=preview_message_id, fence=fence, riders=riders,
            )  # fmt: skip

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
            await s.execute(
                insert(ModelCall).values(usage_row(turn_id, chat_id, completion, latency_s))
            )

    async def tokens_since(self, since: datetime) -> int:
        async with self._db.session() as s:
            total = await s.scalar(
                select(func.coalesce(func.sum(ModelCall.total_tokens), 0)).where(
                    ModelCall.created_at >= since
                )
            )
        return int(total or 0)

    async def oldest_run_since(self, since: datetime) -> datetime | None:
        async with self._db.session() as s:
            return await s.scalar(select(func.min(Turn.started_at)).where(Turn.started_at >= since))

    async def runs_since(self, since: datetime) -> int:
        async with self._db.session() as s:
            count = await s.scalar(select(func.count()).where(Turn.started_at >= since))
        return int(count or 0)

    async def requester(self, turn_id: str) -> int | None:
        """The person whose message started the turn (None: a job, a webhook, or a turn from
        before this was recorded)."""
        async with self._db.session() as s:
            return await s.scalar(select(Turn.requester_id).where(Turn.id == turn_id))

    async def kind_and_taint(self, turn_id: str) -> tuple[TurnKind, bool] | None:
        """A turn's kind and whether it is tainted so far (None for an unknown turn)."""
        async with self._db.session() as s:
            turn = await s.get(Turn, turn_id)
        return None if turn is None else (TurnKind(turn.kind), bool(turn.tainted))


@dataclasses.dataclass(frozen=True, slots=True)
class _Left:
    """What interrupted turns left for the messages a turn starts on."""

    message_id: int | None = None  # a recorded preview, now the new turn's
    unrecorded: UnrecordedPreview | None = None  # else one sent maybe, with no id recorded
    session_id: int | None = None  # the session the turn was recorded in


async def _take_previews(s: AsyncSession, chat_id: int, update_ids: Sequence[int]) -> _Left:
    """Detach the previews that ended turns (interrupted ones: their inbox rows are still
    pending) left for these updates, and return the newest; it now belongs to the caller."""
    if not update_ids:
        return _Left()
    earlier = select(InboxUpdate.turn_id).where(
        InboxUpdate.update_id.in_(update_ids), InboxUpdate.turn_id.is_not(None)
    )
    left = (
        Turn.chat_id == chat_id,
        Turn.id.in_(earlier),
        Turn.status != TurnStatus.DONE,
        or_(Turn.preview_message_id.is_not(None), Turn.preview_floor.is_not(None)),
    )
    newest = (
        await s.execute(
            select(Turn.preview_message_id, Turn.preview_floor, Turn.preview_text)
            .where(*left)
            .order_by(Turn.started_at.desc())
            .limit(1)
        )
    ).one_or_none()
    if newest is None:
        return _Left()
    await s.execute(
        update(Turn)
        .where(*left)
        .values(preview_message_id=None, preview_floor=None, preview_text=None)
    )
    message_id, floor, text = newest
    if message_id is not None:
        return _Left(message_id=int(message_id))
    if floor is None or not text:
        return _Left()
    return _Left(unrecorded=UnrecordedPreview(int(floor), text))


async def _finish(
    s: AsyncSession,
    turn_id: str,
    status: TurnStatus,
    *,
    update_ids: Sequence[int],
    reply: str | None,
    remember: bool,
    steps: int,
    budget_hit: str | None,
    error: str | None,
    taint: Taint | None,
    preview_message_id: int | None,
    fence: Fence | None,
    riders: Riders | None,
) -> int | None:
    """The turn's end, one statement per row it touches (each can carry a lease fence)."""
    values: dict[str, object] = {
        "status": status, "ended_at": utcnow(), "steps": steps, "budget_hit": budget_hit,
        "error": error,
    }  # fmt: skip
    if taint is not None:
        values["tainted"] = True
        values["taint_source"] = func.coalesce(Turn.taint_source, taint.label)
    ending = update(Turn).where(Turn.id == turn_id)
    if fence is not None:
        # Folded into the turn's own UPDATE: a stale holder's end changes nothing.
        ending = ending.where(held_by(fence))
    ending = ending.values(**values).returning(
        Turn.session_id, Turn.chat_id, Turn.tainted, Turn.reply_to
    )
    ended = (await s.execute(ending.execution_options(synchronize_session=False))).one_or_none()
    if ended is None:
        if fence is not None:
            raise LeaseLost(fence.chat_id)
        raise NoResultFound(f"no turn {turn_id}")
    outbox_id: int | None = None
    if reply is not None:
        if remember:
            await s.execute(
                insert(MessageRow).values(
                    session_id=ended.session_id, chat_id=ended.chat_id, role=Role.ASSISTANT,
                    content=reply, turn_id=turn_id, tainted=bool(ended.tainted),
                    created_at=utcnow(),
                )
            )  # fmt: skip
        added = await s.execute(
            insert(OutboxMessage).values(
                chat_id=ended.chat_id, text=reply, turn_id=turn_id, parts_sent=0,
                edit_message_id=preview_message_id, reply_to=ended.reply_to,
                created_at=utcnow(),
            ).returning(OutboxMessage.id)
        )  # fmt: skip
        outbox_id = int(added.scalar_one())
    if update_ids:
        await mark_inbox_done(s, update_ids, turn_id)
    else:
        # A resumed turn (its messages were handled when it paused) is no longer paused; a
        # chat turn's messages are never a paused turn's, so it skips this statement.
        await s.execute(delete(PausedTurn).where(PausedTurn.turn_id == turn_id))
    await ride(s, riders)
    return outbox_id


async def _start(
    s: AsyncSession,
    turn_id: str,
    chat_id: int,
    session_id: int | None,
    kind: TurnKind,
    inputs: Sequence[tuple[int, str]],
    insert_for: Any,
    *,
    rerun: bool = True,
    untrusted: Mapping[int, Sequence[str]],
    taint: Taint | None,
    requester_id: int | None,
    reply_to: int | None,
    fence: Fence | None = None,
    chat_kind: str = "private",
    lock: bool = False,
) -> _Left:
    """`session_id=None`: the chat's open session, read by the turn's INSERT (created on
    first contact)."""
    update_ids = [u for u, _ in inputs]
    # Only messages an earlier turn took (and was interrupted on) can have left a preview.
    left = await _take_previews(s, chat_id, update_ids) if rerun else _Left()
    unrecorded = left.unrecorded
    turn = {
        "id": turn_id, "chat_id": chat_id, "kind": kind,
        "status": TurnStatus.RUNNING, "started_at": utcnow(),
        "preview_message_id": left.message_id,
        "preview_floor": unrecorded.floor if unrecorded else None,
        "preview_text": unrecorded.text if unrecorded else None,
        "tainted": taint is not None, "taint_source": taint.label if taint else None,
        "requester_id": requester_id, "reply_to": reply_to,
    }  # fmt: skip
    found = None if session_id is not None else await _insert_in_open_session(s, turn, fence)
    if found is not None:
        session_id = found
    else:
        if session_id is None:  # the chat has no session yet (first contact), or lease lost
            session_id = await open_session(s, chat_id, insert_for, chat_kind, lock=lock)
        await _insert_turn(s, turn | {"session_id": session_id}, fence)
    left = dataclasses.replace(left, session_id=session_id)
    if not inputs:
        return left
    row = {"session_id": session_id, "chat_id": chat_id, "role": Role.USER, "turn_id": turn_id}
    if not untrusted:
        # One statement for all the messages; a redelivered update adds nothing.
        await s.execute(
            insert_for(MessageRow)
            .values([
                row | {
                    "content": text, "update_id": update_id, "tainted": False,
                    "created_at": utcnow(),
                }
                for update_id, text in inputs
            ])
            .on_conflict_do_nothing(index_elements=["update_id"])
        )  # fmt: skip
    else:
        for update_id, text in inputs:
            rows = [(words, True) for words in untrusted.get(update_id, ())]
            if text or not rows:
                rows.append((text, False))
            # The update's first row carries its id: a re-run that finds it adds none.
            for index, (content, tainted) in enumerate(rows):
                added = await s.execute(
                    insert_for(MessageRow)
                    .values(
                        row | {
                            "content": content, "tainted": tainted, "created_at": utcnow(),
                            "update_id": update_id if index == 0 else None,
                        }
                    )
                    .on_conflict_do_nothing(index_elements=["update_id"])
                    .returning(MessageRow.id)  # asyncpg reports no reliable rowcount here
                )  # fmt: skip
                if index == 0 and added.scalar() is None:
                    break
    await s.execute(
        update(InboxUpdate).where(InboxUpdate.update_id.in_(update_ids)).values(turn_id=turn_id)
    )
    return left


async def _insert_turn(s: AsyncSession, turn: dict[str, Any], fence: Fence | None) -> None:
    if fence is None:
        await s.execute(insert(Turn).values(turn))
        return
    # Folded into the turn's own INSERT: a stale holder starts nothing (the transaction,
    # with the session it may have opened, is rolled back).
    added = await s.execute(fenced_insert(Turn, turn, fence).returning(Turn.id))
    if added.scalar_one_or_none() is None:
        raise LeaseLost(fence.chat_id)


async def _insert_in_open_session(
    s: AsyncSession, turn: dict[str, Any], fence: Fence | None
) -> int | None:
    """The turn's INSERT reading its session from the chat's row (`INSERT … SELECT … FROM
    chats`), under `fence` if given; the session, or None when nothing was added (the chat has
    no open session yet, or the lease is lost: the caller goes the long way)."""
    columns = TURN_COLUMNS
    row = select(
        *(literal(v, columns[k].type).label(k) for k, v in turn.items()),
        Chat.current_session_id.label("session_id"),
    ).where(Chat.id == turn["chat_id"], Chat.current_session_id.is_not(None))
    if fence is not None:
        row = row.where(held_by(fence))
    added = await s.execute(
        insert(Turn).from_select([*turn, "session_id"], row).returning(Turn.session_id)
    )
    found = added.scalar_one_or_none()
    return None if found is None else int(found)
