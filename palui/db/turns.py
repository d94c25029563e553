"""Turns: one row per turn from start to end; its end writes the reply into history and the
outbox and marks its inbox done in one transaction. Also each model call's token usage (the caps
and /status add these up)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select, update

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
    ) -> None:
        """Record a running turn and add the person's messages (once per update) to history."""
        async with self._db.session() as s, s.begin():
            s.add(
                Turn(
                    id=turn_id,
                    chat_id=chat_id,
                    session_id=session_id,
                    kind=kind,
                    status=TurnStatus.RUNNING,
                    started_at=utcnow(),
                )
            )
            for update_id, text in inputs:
                await s.execute(
                    self._insert(MessageRow)
                    .values(
                        session_id=session_id,
                        chat_id=chat_id,
                        role=Role.USER,
                        content=text,
                        turn_id=turn_id,
                        update_id=update_id,
                        created_at=utcnow(),
                    )
                    .on_conflict_do_nothing(index_elements=["update_id"])
                )
            await s.execute(
                update(InboxUpdate)
                .where(InboxUpdate.update_id.in_([u for u, _ in inputs]))
                .values(turn_id=turn_id)
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
    ) -> int | None:
        """End a turn in one transaction: its reply into history and the outbox, inbox done.

        Returns the reply's outbox id."""
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
                outbox = OutboxMessage(chat_id=turn.chat_id, text=reply, turn_id=turn_id)
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

    async def kind_and_taint(self, turn_id: str) -> tuple[TurnKind, bool] | None:
        """A turn's kind and whether it is tainted so far (None for an unknown turn)."""
        async with self._db.session() as s:
            turn = await s.get(Turn, turn_id)
        return None if turn is None else (TurnKind(turn.kind), bool(turn.tainted))
