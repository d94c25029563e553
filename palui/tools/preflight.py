"""Before a call may go out (DESIGN §1.6 steps 1-2): the pre hooks, then the parameter guards.

Asked before the policy decides, so a card shows (and its approval binds to) the arguments that
will run. The stages themselves live in `palui.tools.rules`; an approved call meets the guards
once more there (`guards_again`), since the operator's pins may have changed while it waited.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from palui.domain import CallStage, ToolCallRequest, ToolOutcome, TurnKind
from palui.tools import rules as ops
from palui.tools.arguments import parse_arguments

if TYPE_CHECKING:
    from palui.tools.runner import CallRunner

# The call as it would run, or its outcome if settled; and the arguments a form is to supply.
Prepared = tuple[ToolCallRequest | ToolOutcome, list[str] | None]


async def prepare(tools: CallRunner, call: ToolCallRequest, step: int) -> Prepared:
    """Pre hooks, then guards (DESIGN §1.6 steps 1-2): the call with its final arguments, or
    its outcome when a hook or a guard settled it; for a call a form will complete, the
    missing arguments the person supplies."""
    tool = tools.offered.get(call.name)
    classification = tools.classification(call.name)
    if tool is None or classification is None:
        return call, None  # run() refuses it with its reason
    rules, lazy = tools.context.policy.rules, tools.context.policy.lazy
    if lazy is not None:
        await lazy.for_call(tools.policy, classification)  # before the policy decides
    try:
        original = parse_arguments(call.arguments)
    except ValueError as exc:  # settled here: the policy and a card never see it
        await tools.record.stage(call, step, CallStage.GUARD, "rejected", str(exc))
        await tools.rejected(call, step, str(exc))
        return ToolOutcome(f"Error: {exc}. Call {call.name} again with a JSON object.", True), None
    view = tools.view(call, tool, original)
    arguments, settled = await ops.pre_hooks(rules, view, tools.record, call, step)
    if settled is not None:
        await tools.record.settled(call, step, settled.status, settled.outcome.text)
        return settled.outcome, None
    guarded = await ops.guard_arguments(
        rules,
        tools.record,
        call,
        step,
        tool,
        arguments,
        tools.taint,
        forms=tools.context.kind is TurnKind.CHAT,  # a person is there to fill a form in
    )
    if isinstance(guarded, ToolOutcome):
        return guarded, None
    if isinstance(guarded, list):
        return call, guarded
    if guarded != original:
        call = ToolCallRequest(call.id, call.name, json.dumps(guarded, ensure_ascii=False))
    return call, None
