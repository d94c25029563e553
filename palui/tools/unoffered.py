"""A call of a tool the turn was not offered at this step: nothing runs.

One that is enabled and allowed in this turn (left out of the budget, not found yet) is offered
from the next step, and the policy decides that call as any other; else the model is told there
is no such tool (and, when some tools were left out, to search for it)."""

from __future__ import annotations

from palui.domain import CallStage, CallStatus, ToolCallRequest, ToolOutcome
from palui.tools.offering import ToolOffer
from palui.tools.record import CallRecord


async def not_offered(
    offer: ToolOffer, record: CallRecord, call: ToolCallRequest, step: int
) -> ToolOutcome:
    if offer.admit(call.name):
        reason = "not offered at this step; offered from the next"
        await record.stage(call, step, CallStage.POLICY, "refused", reason)
        await record.settled(call, step, CallStatus.REJECTED, "not offered yet")
        return ToolOutcome(
            f"Error: {call.name} was not offered at this step and did not run. It is offered "
            "now: call it again if you still need it.",
            is_error=True,
        )
    await record.stage(call, step, CallStage.POLICY, "refused", "not offered in this turn")
    await record.settled(call, step, CallStatus.REJECTED, "not offered")
    hint = " Search for it with palui__find_tools." if offer.searchable else ""
    return ToolOutcome(
        f"Error: there is no tool named {call.name!r} in this turn. Use one of the tools you "
        f"were given, or answer without a tool.{hint}",
        is_error=True,
    )
