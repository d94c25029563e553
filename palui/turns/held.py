"""The agent loop's tool runner for a turn: the turn's `CallRunner`, and held calls once decided.

An approved call runs once: its approval is used up (approved -> executing) before it goes out
and records its result after (executing -> executed). A crash between the two leaves it
`executing`, which a later resume reports as an unknown outcome and never runs again.

Before each call the switches are synced with the database (`CallGate`): a tool switched off or
paused in any process since the turn's offer is refused, approved or not, and a class changed
meanwhile decides the call.

Under a fence (the chat lease the turn runs under) the lease is confirmed before and after each
call (`palui.ports.Fences`: free while it was renewed lately), so a turn whose process stalled
while another took the chat over stops before its next call or model request (`LeaseLost`); the
ledger claim and the approval claim are themselves conditional on the fence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from palui.approvals.cards import edited_note
from palui.approvals.decisions import CHANGED, DENIED, EXPIRED, STILL_RUNNING, Approvals
from palui.domain import (
    CallStage,
    CallStatus,
    Fence,
    HeldDecision,
    ToolCallRequest,
    ToolOutcome,
    Verdict,
)
from palui.observe import Tracing, event
from palui.ports import Fences
from palui.tools import delegation
from palui.tools.runner import CallRunner
from palui.tools.switchboard import CallGate

# How the call's record names each held call that did not run now.
NOT_RUN_LABELS = {
    Verdict.DENIED: "denied",
    Verdict.EXPIRED: "expired",
    Verdict.CHANGED: "changed",
    Verdict.INTERRUPTED: "unknown",
    Verdict.RAN: "ran_before",  # ran before a restart
}


def _not_run(decision: HeldDecision) -> ToolOutcome:
    """What the model is told about a held call that does not run now."""
    match decision.verdict:
        case Verdict.DENIED:
            return ToolOutcome(DENIED, is_error=True)
        case Verdict.EXPIRED:
            return ToolOutcome(EXPIRED, is_error=True)
        case Verdict.CHANGED:
            return ToolOutcome(CHANGED, is_error=True)
        case Verdict.RAN:
            return ToolOutcome(_with_edits(decision, decision.result or ""))
    return ToolOutcome(STILL_RUNNING, is_error=True)


def _with_edits(decision: HeldDecision, text: str) -> str:
    # A person's edits are named first, so the model does not "fix" the values back.
    if decision.model_arguments is None:
        return text
    return edited_note(decision.model_arguments, decision.call.arguments) + text


@dataclass(frozen=True, slots=True)
class TurnCalls:
    """Implements `palui.ports.ToolRunner` for one turn."""

    tools: CallRunner
    approvals: Approvals
    gate: CallGate | None = None
    fence: Fence | None = None
    fences: Fences | None = None
    tracing: Tracing = field(default_factory=Tracing)
    # Calls whose switches `prepare` synced: their run right after needs no second lookup.
    _synced: set[str] = field(default_factory=set)
    _delegations: dict[str, float] = field(default_factory=dict)  # call id -> when it began

    async def _confirm(self) -> None:
        if self.fence is not None and self.fences is not None:
            await self.fences.confirm(self.fence)

    def concurrent_safe(self, name: str) -> bool:
        return self.tools.concurrent_safe(name)

    async def prepare(self, call: ToolCallRequest, step: int) -> ToolCallRequest | ToolOutcome:
        if self.gate is not None:
            await self.gate.board.sync()  # the approval check next reads the class set now
            self._synced.add(call.id)
        return await self.tools.prepare(call, step)

    def needs_approval(self, call: ToolCallRequest) -> bool:
        return self.tools.needs_approval(call)

    async def run(self, call: ToolCallRequest, step: int) -> ToolOutcome:
        with self.tracing.span("palui.tool", **{"palui.tool": call.name}):
            await self._confirm()
            refused = await self._switched_off(call, step)
            outcome = refused or await self.tools.run(call, step)
            await self._confirm()  # e.g. stalled during the call: the next step must not go on
            return outcome

    async def _switched_off(self, call: ToolCallRequest, step: int) -> ToolOutcome | None:
        tool = self.tools.offered.get(call.name)
        if self.gate is None or tool is None:
            return None  # not offered: the runner refuses it with its reason
        synced = call.id in self._synced
        self._synced.discard(call.id)  # a held call run later (a resume) is synced again
        reason = await self.gate.refusal(tool, synced=synced)
        if reason is None:
            return None
        await self.tools.record.stage(call, step, CallStage.POLICY, "refused", reason)
        await self.tools.record.settled(call, step, CallStatus.REJECTED, reason)
        return ToolOutcome(f"Error: {call.name} was not run: {reason}.", is_error=True)

    async def delegating(
        self, call: ToolCallRequest, step: int, task: str, *, resumed: bool = False
    ) -> ToolOutcome | None:
        """A delegation call's sub-turn starts (`palui.agent.subturn`): the lease and the
        switches as for any call, then its record (a resumed one has it already)."""
        await self._confirm()
        refused = await self._switched_off(call, step)
        if refused is not None:
            return refused
        self._delegations[call.id] = time.monotonic()
        if not resumed:
            await delegation.record_start(self.tools, call, step, task)
        return None

    async def delegated(
        self, call: ToolCallRequest, step: int, outcome: ToolOutcome, *, cut_short: bool = False
    ) -> None:
        took = time.monotonic() - self._delegations.pop(call.id, time.monotonic())
        await delegation.record_end(self.tools, call, step, outcome, took, cut_short=cut_short)
        if not cut_short:
            await self._confirm()

    async def run_held(self, decision: HeldDecision, step: int) -> ToolOutcome:
        with self.tracing.span("palui.tool", **{"palui.tool": decision.call.name}):
            event("palui.card_decided", verdict=str(decision.verdict))
            return await self._run_held(decision, step)

    async def _run_held(self, decision: HeldDecision, step: int) -> ToolOutcome:
        if decision.verdict is Verdict.APPROVED:
            if await self.approvals.claim_execution(decision, self.fence):
                outcome = await self._run_approved(decision, step)
                await self._confirm()
                return outcome
            # Another resume took it: it may be running or have run; never fire it twice.
            decision = HeldDecision(
                decision.approval_id, decision.call, Verdict.INTERRUPTED, decision.model_arguments
            )
        outcome = _not_run(decision)
        label = NOT_RUN_LABELS[decision.verdict]
        await self.tools.record_step(decision.call, step, CallStage.APPROVAL, label, outcome.text)
        return outcome

    async def _run_approved(self, decision: HeldDecision, step: int) -> ToolOutcome:
        outcome = await self._switched_off(decision.call, step) or await self.tools.run_approved(
            decision.call, step, model_arguments=decision.model_arguments
        )
        await self.approvals.executed(decision, outcome.text)
        return ToolOutcome(_with_edits(decision, outcome.text), outcome.is_error)
