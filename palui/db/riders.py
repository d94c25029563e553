"""Rows a turn owes the database that ride on its next transaction instead of taking their own.

A model call's token usage and an auto-recall check used to be a transaction each, three or
four commits a turn. They are bookkeeping: nothing goes out on the strength of them, and what
reads them (the token cap, the skip rate on the recall card) reads them between turns. So a
turn keeps them here and its end carries them, one INSERT for all its model calls (the turn's
end or failure, `palui.db.turns`). A turn that stops without an end (paused for an approval, or
a shutdown mid-call) writes them on its own (`TurnRepo.write_riders`).

The price, on purpose: a `kill -9` before the turn's end (while a tool call is out, or while a
streamed preview closes) loses the token counts of the turn's model calls so far. So that a
crash loop (a call that kills the process every time) cannot spend past the daily token cap, a
turn that re-runs messages an earlier turn was interrupted on is `eager`: its tool calls'
records carry the usage (`palui.tools.record`), and a read call of its is recorded before it
goes out whenever usage waits. Only a batch's first attempt can lose a count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, insert
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.models import ModelCall, RecallCheck, TurnOfferRow, utcnow
from palui.db.repo import insert_params
from palui.domain import CheckOutcome, Completion, OfferEvent

CHECKS_KEPT = 1_000  # only recent auto-recall checks are ever shown
PRUNE_EVERY = 100  # the checks are pruned when a new one's id is a multiple of this
MODEL_CALLS = cast(Table, ModelCall.__table__)
CHECKS = cast(Table, RecallCheck.__table__)
OFFERS = cast(Table, TurnOfferRow.__table__)
_CHECKED = ("chat_id", "turn_id", "outcome", "detail", "latency_ms", "created_at")
# Built once, run with params (a statement built per call costs several times its run in
# SQLAlchemy's CPU, palui.db.leases).
_WRITE_CHECK = insert_params(CHECKS, _CHECKED).returning(CHECKS.c.id)
_PRUNE_CHECKS = delete(CHECKS).where(CHECKS.c.id <= bindparam("through"))


@dataclass(slots=True)
class Riders:
    usage: list[dict[str, Any]] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    offers: list[dict[str, Any]] = field(default_factory=list)  # tools offered, and why
    eager: bool = False  # a re-run: usage is written before any call goes out (see above)

    def __bool__(self) -> bool:
        return bool(self.usage or self.checks or self.offers)

    def model_call(
        self, turn_id: str | None, chat_id: int | None, completion: Completion, latency_s: float
    ) -> None:
        self.usage.append(usage_row(turn_id, chat_id, completion, latency_s))

    def offered(self, turn_id: str, events: Sequence[OfferEvent]) -> None:
        now = utcnow()
        self.offers.extend(
            {
                "turn_id": turn_id,
                "tool": e.tool,
                "why": str(e.why),
                "detail": e.detail,
                "enabled": e.enabled,
                "created_at": now,
            }
            for e in events
        )

    def recall_check(
        self,
        chat_id: int,
        outcome: CheckOutcome,
        *,
        turn_id: str | None = None,
        detail: str | None = None,
        latency_ms: int | None = None,
    ) -> None:
        self.checks.append(check_row(chat_id, outcome, turn_id, detail, latency_ms))


def usage_row(
    turn_id: str | None, chat_id: int | None, completion: Completion, latency_s: float
) -> dict[str, Any]:
    return {
        "turn_id": turn_id,
        "chat_id": chat_id,
        "model": completion.model,
        "prompt_tokens": completion.usage.prompt_tokens,
        "completion_tokens": completion.usage.completion_tokens,
        "total_tokens": completion.usage.total_tokens,
        "latency_ms": round(latency_s * 1000),
        "created_at": utcnow(),
    }


def check_row(
    chat_id: int,
    outcome: CheckOutcome,
    turn_id: str | None,
    detail: str | None,
    latency_ms: int | None,
) -> dict[str, Any]:
    return {
        "chat_id": chat_id,
        "turn_id": turn_id,
        "outcome": outcome,
        "detail": detail,
        "latency_ms": latency_ms,
        "created_at": utcnow(),
    }


async def ride(session: AsyncSession, riders: Riders | None) -> None:
    """Write what the turn owes inside the caller's transaction (one INSERT per kind), and
    forget it: a rider is written once."""
    if not riders:
        return
    if riders.usage:
        # One statement, the rows as its parameters (an executemany): a statement of many
        # VALUES rows has no cache key, so SQLAlchemy compiled it anew on every turn. The
        # table, not the mapped class: an ORM bulk INSERT pays the mapper's work on each call.
        await session.execute(insert(MODEL_CALLS), riders.usage)
    if riders.offers:
        await session.execute(insert(OFFERS), riders.offers)
    for row in riders.checks:
        await write_check(session, row)
    riders.usage.clear()
    riders.checks.clear()
    riders.offers.clear()


async def write_check(session: AsyncSession, row: dict[str, Any]) -> None:
    new_id = int((await session.execute(_WRITE_CHECK, row)).scalar_one())
    if new_id % PRUNE_EVERY == 0:  # the table stays small without a DELETE per check
        await session.execute(_PRUNE_CHECKS, {"through": new_id - CHECKS_KEPT})
