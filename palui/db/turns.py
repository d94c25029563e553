"""Turns: one row per turn from start to end; its end writes the reply into history and the
outbox and marks its inbox done in one transaction. Also each model call's token usage (the caps
and /status add these up)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.inbox import mark_inbox_done
from palui.db.models import (
    InboxUpdate,
    MessageRow,
    ModelCall,
    OutboxMessage,
    PausedTurn,
    Turn,
    utcnow,
)
from palui.db.repo import Repo
from palui.domain import Completion, Role, Taint, TurnKind, TurnStatus


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
    ) -> int | None:
        """Record a running turn and add the person's messages (once per update) to history.

        `untrusted`: per update, someone else's words in it (already fenced), stored as tainted
        messages before the person's own; `taint` is then the turn's starting taint, recorded
        now so later turns name it even if this one never ends. `requester_id`: whose message
        started the turn (a group's `[groups] approver = "requester"`); `reply_to`: the message
        its answer is threaded to.

        Returns the preview message it takes over: one that an interrupted earlier turn for the
        same messages left in the chat (the new turn's answer is then shown in it)."""
        update_ids = [u for u, _ in inputs]
        untrusted = untrusted or {}
        async with self._db.session() as s, s.begin():
            left = await _take_previews(s, chat_id, update_ids)
            s.add(
                Turn(
                    id=turn_id,
                    chat_id=chat_id,
                    session_id=session_id,
                    kind=kind,
                    status=TurnStatus.RUNNING,
                    started_at=utcnow(),
                    preview_message_id=left,
                    tainted=taint is not None,
                    taint_source=taint.label if taint else None,
                    requester_id=requester_id,
                    reply_to=reply_to,
                )
            )
            for update_id, text in inputs:
                rows = [(words, True) for words in untrusted.get(update_id, ())]
                if text or not rows:
                    rows.append((text, False))
                # The update's first row carries its id: a re-run that finds it adds none.
                for index, (content, tainted) in enumerate(rows):
                    added = await s.execute(
                        self._insert(MessageRow)
                        .values(
                            session_id=session_id,
                            chat_id=chat_id,
                            role=Role.USER,
                            content=content,
                            turn_id=turn_id,
                            update_id=update_id if index == 0 else None,
                            tainted=tainted,
                            created_at=utcnow(),
                        )
                        .on_conflict_do_nothing(index_elements=["update_id"])
                        .returning(MessageRow.id)  # asyncpg reports no reliable rowcount here
                    )
                    if index == 0 and added.scalar() is None:
                        break
            await s.execute(
                update(InboxUpdate)
                .where(InboxUpdate.update_id.in_(update_ids))
                .values(turn_id=turn_id)
            )
        return left

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
    ) -> int | None:
        """End a turn in one transaction: its reply into history and the outbox, inbox done.

        `preview_message_id`: the reply's first part is delivered as an edit of that message
        (the turn's streamed preview). Returns the reply's outbox id."""
        outbox_id: int | None = None
        async with self._db.session() as s, s.begin():
            turn = await s.get_one(Turn, turn_id)
            turn.status = status
            turn.ended_at = utcnow()
            turn.steps = steps
            turn.budget_hit = budget_hit
            turn.error = error
            turn.tainted = turn.tainted or taint is not None
            turn.taint_source = turn.taint_source or (taint.label if taint else None)
            if reply is not None:
                if remember:
                    s.add(
                        MessageRow(
                            session_id=turn.session_id,
                            chat_id=turn.chat_id,
                            role=Role.ASSISTANT,
                            content=reply,
                            turn_id=turn_id,
                            tainted=turn.tainted,
                        )
                    )
                outbox = OutboxMessage(
                    chat_id=turn.chat_id, text=reply, turn_id=turn_id,
                    edit_message_id=preview_message_id, reply_to=turn.reply_to,
                )  # fmt: skip
                s.add(outbox)
                await s.flush()
                outbox_id = outbox.id
            await mark_inbox_done(s, update_ids, turn_id)
            # A resumed turn that ends is no longer paused.
            await s.execute(delete(PausedTurn).where(PausedTurn.turn_id == turn_id))
        return outbox_id

    async def record_model_call(
        self, turn_id: str | None, chat_id: int | None, completion: Completion, latency_s: float
    ) -> None:
        async with self._db.session() as s, s.begin():
            s.add(
                ModelCall(
                    turn_id=turn_id,
                    chat_id=chat_id,
                    model=completion.model,
                    prompt_tokens=completion.usage.prompt_tokens,
                    completion_tokens=completion.usage.completion_tokens,
                    total_tokens=completion.usage.total_tokens,
                    latency_ms=round(latency_s * 1000),
                    created_at=utcnow(),
                )
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


async def _take_previews(s: AsyncSession, chat_id: int, update_ids: Sequence[int]) -> int | None:
    """Detach the previews that ended turns (interrupted ones: their inbox rows are still
    pending) left for these updates, and return the newest; it now belongs to the caller."""
    if not update_ids:
        return None
    earlier = select(InboxUpdate.turn_id).where(
        InboxUpdate.update_id.in_(update_ids), InboxUpdate.turn_id.is_not(None)
    )
    left = Turn.chat_id == chat_id, Turn.id.in_(earlier), Turn.preview_message_id.is_not(None)
    ids = list(
        await s.scalars(
            select(Turn.preview_message_id)
            .where(*left, Turn.status != TurnStatus.DONE)
            .order_by(Turn.started_at.desc())
        )
    )
    if not ids:
        return None
    await s.execute(
        update(Turn).where(*left, Turn.status != TurnStatus.DONE).values(preview_message_id=None)
    )
    return ids[0]
