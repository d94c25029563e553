"""`palui__delegate(task)`: the definition of the built-in delegation tool, and what its call
records. The sub-turn itself is run by the agent loop (`palui.agent.subturn`); this module only
says what the tool is and how its call is written in the call's record (`palui runs show`).

It is marked read: by itself it changes nothing, and everything the sub-turn does is checked on
its own (hooks, guards, policy, cards, ledger, caps). It is never offered to webhook summaries
(they get no tools at all), and a sub-turn is never offered it (depth 1).
"""

from __future__ import annotations

from palui.domain import CallStage, CallStatus, RemoteTool, ToolCallRequest, ToolOutcome
from palui.tools.arguments import parse_arguments
from palui.tools.results import truncate
from palui.tools.runner import CallRunner

NAME = "palui__delegate"
TASK_SHOWN = 200  # characters of the task in the record's stage

DELEGATE = RemoteTool(
    "delegate",
    "Hand a self-contained sub-task to a helper. The helper sees only the task text (a fresh "
    "context), uses the same tools under the same rules, and answers with its result, which you "
    "get as this tool's result. Use it for a side investigation whose details would clutter "
    "this conversation. Word the task so it stands alone: what to find or do, and what to "
    "report back.",
    {
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "The sub-task, complete in itself (the helper sees nothing else).",
            }
        },
        "required": ["task"],
    },
    {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
)


async def record_start(tools: CallRunner, call: ToolCallRequest, step: int, task: str) -> None:
    """The delegation call's record, written before its sub-turn's calls, so it comes first."""
    classification = tools.classification(call.name)
    tool_class = classification.tool_class if classification is not None else "read"
    decision = tools.decision(call)
    decision_id = tools.decision_id(call.name, decision)
    why = tools.why(call)
    await tools.record.decided(call, step, tool_class, str(decision), decision_id, why)
    await tools.record.stage(call, step, CallStage.POLICY, "sub-task", task[:TASK_SHOWN])
    # Written now (a read's start is otherwise written with its end), before the sub-turn's
    # calls' records, and as running: a crash leaves its outcome unknown.
    arguments = parse_arguments(call.arguments)
    await tools.record.started(
        call, step, arguments, tool_class=tool_class, sends_out=False, now=True
    )


async def record_end(
    tools: CallRunner,
    call: ToolCallRequest,
    step: int,
    outcome: ToolOutcome,
    took: float,
    *,
    cut_short: bool = False,
) -> None:
    """`cut_short`: /stop (or the lease's loss) ended the sub-turn: its outcome is unknown."""
    status = CallStatus.ERROR if outcome.is_error else CallStatus.OK
    status = CallStatus.UNKNOWN if cut_short else status
    reason = truncate(outcome.text, 500) if outcome.is_error else ""
    await tools.record.ended(call, step, status, outcome.text, reason, took)
