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
    from palui.tools.runner import TurnTools


async def prepare(
    tools: TurnTools, call: ToolCallRequest, step: int
) -> ToolCallRequest | ToolOutcome:
    """Pre hooks, then guards (DESIGN §1.6 steps 1-2): the call with its final arguments, or
    its outcome when a hook or a guard settled it. A call a form will complete is noted in
    `tools.form_calls` (the missing arguments the person supplies)."""
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
    arguments, settled = await ops.pre_hooks(tools.rules, view, tools.record, call, step)
    if settled is not None:
        await tools.record.settled(call, step, settled.status, settled.outcome.text)
        return settled.outcome
    guarded = await ops.guard_arguments(
        tools.rules,
        tools.record,
        call,
        step,
        tool,
        arguments,
        tools.taint,
        forms=tools.kind is TurnKind.CHAT,  # a person is there to fill a form in
    )
    if isinstance(guarded, ToolOutcome):
        return guarded
    prepared = call
    if isinstance(guarded, list):
        tools.form_calls[call.id] = guarded
    elif guarded != original:
        prepared = ToolCallRequest(call.id, call.name, json.dumps(guarded, ensure_ascii=False))
    return prepared
