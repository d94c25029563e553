"""Before a call may go out (DESIGN §1.6 steps 1-2): the pre hooks, then the parameter guards.

Asked before the policy decides, so a card shows (and its approval binds to) the arguments that
will run; an approved call is checked against the guards once more, since the operator's pins
may have changed while the card waited.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from palui.domain import CallStage, ToolCallRequest, ToolOutcome
from palui.tools import provenance
from palui.tools.arguments import parse_arguments
from palui.tools.guards import GuardRejected, Guards
from palui.tools.registry import OfferedTool
from palui.tools.rules import pre_hooks

if TYPE_CHECKING:
    from palui.tools.runner import TurnTools


async def prepare(
    tools: TurnTools, call: ToolCallRequest, step: int
) -> ToolCallRequest | ToolOutcome:
    """Pre hooks, then guards (DESIGN §1.6 steps 1-2): the call with its final arguments, or
    its outcome when a hook or a guard settled it. Asked before the approval check, so a card
    shows (and its approval binds to) the arguments that will run."""
    tool = tools.offer.tools.get(call.name)
    classification = tools.classification(call.name)
    if tool is None or classification is None:
        return call  # run() refuses it with its reason
    if tools.lazy is not None:
        await tools.lazy.for_call(tools.policy, classification)  # before the policy decides
    try:
        original = parse_arguments(call.arguments)
    except ValueError as exc:  # settled here: the policy and a card never see it
        await tools.record.stage(call, step, CallStage.GUARD, "rejected", str(exc))
        await tools.rejected(call, step, str(exc))
        return ToolOutcome(f"Error: {exc}. Call {call.name} again with a JSON object.", True)
    view = tools.view(call, tool, original)
    arguments, settled = await pre_hooks(tools.rules, view, tools.record, call, step)
    if settled is not None:
        await tools.record.settled(call, step, settled.status, settled.outcome.text)
        return settled.outcome
    guards = tools.rules.guards
    try:
        final = guards.apply(call.name, arguments, tool.remote.input_schema or {})
        final = provenance.stamped(tool, final, tools.taint)  # a memory write's origin
    except GuardRejected as exc:
        await tools.record.stage(
            call, step, CallStage.GUARD, "rejected", exc.message, {"arguments": arguments}
        )
        await tools.rejected(call, step, f"guard: {exc.message}")
        return ToolOutcome(f"Error: {call.name} was not run. {exc.message}", is_error=True)
    if guards.configured(call.name) or final != arguments:
        pinned = guards.pinned(call.name)
        reason = f"pinned {', '.join(sorted(pinned))}" if pinned else "the arguments passed"
        await tools.record.stage(
            call, step, CallStage.GUARD, "pinned" if pinned else "passed", reason,
            {"before": arguments, "after": final},
        )  # fmt: skip
    if final == original:
        return call
    return ToolCallRequest(call.id, call.name, json.dumps(final, ensure_ascii=False))


def approved_mismatch(
    guards: Guards, call: ToolCallRequest, tool: OfferedTool
) -> tuple[str, str] | None:
    """Why an approved call no longer matches what the guards would run — (the reason, the
    model's error text) — or None. The hooks don't run again: the card showed their result."""
    try:
        arguments = parse_arguments(call.arguments)
        final = guards.apply(call.name, arguments, tool.remote.input_schema or {})
    except (ValueError, GuardRejected) as exc:
        reason = exc.message if isinstance(exc, GuardRejected) else str(exc)
        return reason, f"Error: {call.name} was not run. {reason}"
    if final != arguments:
        reason = "the operator's pinned values changed after the card was approved"
        return reason, f"Error: {call.name} was not run: {reason}."
    return None
