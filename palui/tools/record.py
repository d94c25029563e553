"""A tool call's record (DESIGN §1.6): the one writer of what happened to each call.

One record per call (turn, model step, call id): its class, the policy's decision with its id
and reason, the arguments that ran (and the model's, if a person edited them), its status, its
result, its timing, and the story stage by stage (hooks, guards, policy, approval, destination
guard, send cap, ledger, execution, post hooks) that `palui runs show` explains. `TurnTools`
tells it each stage as the call moves on; nothing else writes a call's record.

The record says `running` before the call goes out, so a crash or a /stop mid-call leaves an
unknown outcome behind rather than no record at all (`palui.db.recovery` settles it).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any, Protocol

from palui.domain import CallChange, CallStage, CallStatus, StageEntry, ToolCallRequest

# A card's outcome for a held call that never ran (not "unknown": that one is still running
# elsewhere, nor "ran_before": it ran before a restart).
NOT_APPROVED = frozenset({"denied", "expired", "changed"})


class CallStore(Protocol):
    """Where call records are kept (implemented by `palui.db.calls.CallRecordRepo`)."""

    async def save(
        self, turn_id: str, chat_id: int, step: int, call_id: str, change: CallChange
    ) -> None: ...

    async def sends_since(self, since: datetime) -> int: ...

    async def first_cap_notice(self, chat_id: int, day: str) -> bool: ...


class CallRecord:
    """The records of one turn's calls; records nothing without a store (unit tests)."""

    def __init__(self, store: CallStore | None, turn_id: str, chat_id: int) -> None:
        self.store = store
        self._turn_id = turn_id
        self._chat_id = chat_id

    async def stage(
        self,
        call: ToolCallRequest,
        step: int,
        stage: CallStage,
        outcome: str,
        reason: str = "",
        detail: dict[str, Any] | None = None,
    ) -> None:
        """A stage the call went through, with its outcome and why."""
        status = None
        if stage is CallStage.APPROVAL and outcome in NOT_APPROVED:
            status = CallStatus.NOT_APPROVED
        entry = StageEntry(stage, outcome, reason, detail or {})
        await self._save(call, step, CallChange(call.name, entry, status=status))

    async def decided(
        self,
        call: ToolCallRequest,
        step: int,
        tool_class: str,
        decision: str,
        decision_id: str,
        why: str,
        *,
        held: bool = False,
    ) -> None:
        """The policy's decision (held: the call waits for a person's approval card)."""
        detail = {"decision_id": decision_id, "class": tool_class}
        if held:
            detail = {"arguments": call.arguments, "decision_id": decision_id}
        entry = StageEntry(CallStage.POLICY, decision, why, detail)
        await self._save(call, step, CallChange(
            call.name, entry, status=CallStatus.HELD if held else None, tool_class=tool_class,
            decision=decision, decision_id=decision_id, reason=why,
        ))  # fmt: skip

    async def approved(
        self,
        call: ToolCallRequest,
        step: int,
        reason: str,
        detail: dict[str, Any] | None = None,
        *,
        model_arguments: str | None = None,
    ) -> None:
        entry = StageEntry(CallStage.APPROVAL, "approved", reason, detail or {})
        change = CallChange(call.name, entry, model_arguments=model_arguments)
        await self._save(call, step, change)

    async def settled(
        self, call: ToolCallRequest, step: int, status: CallStatus, result: str
    ) -> None:
        """The call ended without going out (refused, rejected, settled by a hook or the
        ledger); `result` says why."""
        change = CallChange(call.name, status=status, result=result, duration_s=0.0)
        await self._save(call, step, change)

    async def started(
        self,
        call: ToolCallRequest,
        step: int,
        arguments: dict[str, Any],
        *,
        tool_class: str | None,
        sends_out: bool,
    ) -> None:
        """Written before the call goes out: the send cap counts it even if we crash mid-call."""
        entry = StageEntry(CallStage.EXECUTE, str(CallStatus.RUNNING), "", {"arguments": arguments})
        await self._save(call, step, CallChange(
            call.name, entry, status=CallStatus.RUNNING, tool_class=tool_class,
            sends_out=sends_out, went_out=True,
        ))  # fmt: skip

    async def ended(
        self,
        call: ToolCallRequest,
        step: int,
        status: CallStatus,
        result: str,
        reason: str,
        duration_s: float,
    ) -> None:
        entry = StageEntry(CallStage.EXECUTE, str(status), reason, duration_s=duration_s)
        await self._save(call, step, CallChange(
            call.name, entry, settles=True, status=status, result=result, duration_s=duration_s,
        ))  # fmt: skip

    async def _save(self, call: ToolCallRequest, step: int, change: CallChange) -> None:
        if self.store is None:
            return
        # The arguments as they stand at this stage: in the end, what ran.
        change = dataclasses.replace(change, arguments=call.arguments)
        await self.store.save(self._turn_id, self._chat_id, step, call.id, change)
