"""Recovering a chat's unfinished work, one chat at a time (DESIGN §3, several processes).

A chat's turns, their tool calls, ledger actions and paused-turn claims are only ever in flight
while some process holds the chat's lease (`palui.db.leases`). So whoever takes the lease may
treat whatever of that chat is still `running` / `in_progress` / claimed as left behind by a
previous holder that is gone, and settle it: turns failed (their inbox rows stay pending, so the
messages are answered again), calls unknown, actions unknown (never re-fired),
claims released (the paused turn resumes once, here). Nothing is swept across chats, so a live
process's work in other chats is never touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, select, union, update

from palui.db.calls import settle_interrupted
from palui.db.models import (
    ActionRow,
    CallRecordRow,
    ChatLease,
    InboxUpdate,
    PausedTurn,
    Turn,
    utcnow,
)
from palui.db.repo import Repo
from palui.domain import ActionState, CallStatus, InboxStatus, TurnStatus


@dataclass(frozen=True, slots=True)
class Recovered:
    turns: int = 0
    calls: int = 0  # settled as unknown outcome
    actions: int = 0
    claims: int = 0

    def __add__(self, other: Recovered) -> Recovered:
        return Recovered(
            self.turns + other.turns,
            self.calls + other.calls,
            self.actions + other.actions,
            self.claims + other.claims,
        )

    def __bool__(self) -> bool:
        return any((self.turns, self.calls, self.actions, self.claims))


def _leftovers() -> Any:
    """A chat's turns running, paused turns claimed, actions in progress ("": of no turn), for
    `in_chat`: built once (a lease take asks it)."""
    turns, paused, actions = Turn.__table__.c, PausedTurn.__table__.c, ActionRow.__table__.c
    chat_id = bindparam("in_chat", type_=turns.chat_id.type)
    return union(
        select(turns.id).where(turns.chat_id == chat_id, turns.status == TurnStatus.RUNNING),
        select(paused.turn_id).where(paused.chat_id == chat_id, paused.claimed_at.is_not(None)),
        select(func.coalesce(actions.turn_id, "")).where(
            actions.chat_id == chat_id, actions.state == ActionState.IN_PROGRESS
        ),
    )


_LEFTOVERS = _leftovers()


class RecoveryRepo(Repo):
    async def unfinished_chats(self) -> list[int]:
        """Chats with anything in flight: a turn, a tool call, a ledger action, a claim."""
        query = union(
            select(Turn.chat_id).where(Turn.status == TurnStatus.RUNNING),
            select(Turn.chat_id)
            .join(CallRecordRow, CallRecordRow.turn_id == Turn.id)
            .where(CallRecordRow.status == CallStatus.RUNNING),
            select(ActionRow.chat_id).where(ActionRow.state == ActionState.IN_PROGRESS),
            select(PausedTurn.chat_id).where(PausedTurn.claimed_at.is_not(None)),
        )
        async with self._db.session() as s:
            return sorted(int(chat_id) for chat_id in await s.scalars(query))

    async def waiting_chats(self) -> list[int]:
        """Chats with a message stored and not yet answered (its process may have died before
        its worker took the chat)."""
        query = select(InboxUpdate.chat_id).where(
            InboxUpdate.status == InboxStatus.PENDING, InboxUpdate.chat_id.is_not(None)
        )
        async with self._db.session() as s:
            return sorted({int(c) for c in await s.scalars(query.distinct()) if c is not None})

    async def unheld(self, chat_ids: list[int]) -> list[int]:
        """Of these chats, those whose lease is free or lapsed (no live process works on them)."""
        if not chat_ids:
            return []
        async with self._db.session() as s:
            held = set(
                await s.scalars(
                    select(ChatLease.chat_id).where(
                        ChatLease.chat_id.in_(chat_ids), ChatLease.expires_at >= utcnow()
                    )
                )
            )
        return [chat_id for chat_id in chat_ids if chat_id not in held]

    async def recover_chat(self, chat_id: int, reason: str) -> Recovered:
        """Settle what a previous lease holder left in flight in this chat, in one transaction.

        Only call this while holding the chat's lease and running none of its turns."""
        # Calls are only in flight in a turn running or resumed (claimed); an action in
        # progress names its turn. Looked for first without a write transaction: a lease taken
        # after a clean release (the usual case) finds nothing and costs one read. Nothing
        # comes in flight meanwhile: the lease is ours and a stale holder's writes are fenced.
        async with self._db.session() as s:
            found = list(await s.scalars(_LEFTOVERS, {"in_chat": chat_id}))
        if not found:
            return Recovered()
        in_flight = [turn_id for turn_id in found if turn_id]  # "": an action of no turn
        now = utcnow()
        async with self._db.session() as s, s.begin():
            calls = await settle_interrupted(s, in_flight) if in_flight else 0
            actions = await s.execute(
                update(ActionRow)
                .where(ActionRow.chat_id == chat_id, ActionRow.state == ActionState.IN_PROGRESS)
                .values(state=ActionState.UNKNOWN, updated_at=now)
            )
            turns = await s.execute(
                update(Turn)
                .where(Turn.chat_id == chat_id, Turn.status == TurnStatus.RUNNING)
                .values(status=TurnStatus.FAILED, error=reason, ended_at=now)
            )
            claims = await s.execute(
                update(PausedTurn)
                .where(PausedTurn.chat_id == chat_id, PausedTurn.claimed_at.is_not(None))
                .values(claimed_at=None)
            )
        return Recovered(_count(turns), calls, _count(actions), _count(claims))


def _count(result: object) -> int:
    return int(getattr(result, "rowcount", 0) or 0)
