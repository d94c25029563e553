"""A paused turn as JSON, so it can wait in the database and resume in any process.

The turn's context (kind, taint, offer) is stored under the key "extra" in the shape it has
always had, so paused turns already in a database resume, and so does a row written by this
version and read by an older process sharing the database (it must not lose the taint).
"""

from __future__ import annotations

import json
from typing import Any

from palui.agent.state import SubTurn, TurnSnapshot
from palui.domain import (
    Message,
    Role,
    Taint,
    TaintVia,
    ToolCallRequest,
    ToolOutcome,
    TurnContext,
    TurnKind,
    Usage,
)


def _call(data: dict[str, Any]) -> ToolCallRequest:
    return ToolCallRequest(data["id"], data["name"], data["arguments"])


def _call_json(call: ToolCallRequest) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def _message_json(message: Message) -> dict[str, Any]:
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": [_call_json(c) for c in message.tool_calls],
        "tool_call_id": message.tool_call_id,
        "name": message.name,
    }


def _message(data: dict[str, Any]) -> Message:
    return Message(
        Role(data["role"]),
        data["content"],
        tuple(_call(c) for c in data["tool_calls"]),
        data["tool_call_id"],
        data["name"],
    )


def _context_json(context: TurnContext) -> dict[str, Any]:
    taint = context.taint
    return {
        "kind": str(context.kind),
        "taint": None
        if taint is None
        else {
            "connector": taint.connector,
            "tool": taint.tool,
            "ago": taint.turns_ago,
            "via": taint.via,
        },
        "offer": list(context.offer),
    }


def _context(data: dict[str, Any]) -> TurnContext:
    taint = data.get("taint")
    return TurnContext(
        kind=TurnKind(data.get("kind", TurnKind.CHAT)),
        taint=_taint(taint) if taint else None,
        offer=tuple(data.get("offer", ())),
    )


def _taint(data: dict[str, Any]) -> Taint:
    via = data.get("via")  # snapshots stored before `via` have none
    return Taint(data["connector"], data["tool"], data["ago"], TaintVia(via) if via else None)


def _snapshot_json(snapshot: TurnSnapshot) -> dict[str, Any]:
    data: dict[str, Any] = {
        "messages": [_message_json(m) for m in snapshot.messages],
        "steps": snapshot.steps,
        "usage": [snapshot.usage.prompt_tokens, snapshot.usage.completion_tokens],
        "partial": list(snapshot.partial),
        "elapsed_s": snapshot.elapsed_s,
        "step_calls": [_call_json(c) for c in snapshot.step_calls],
        "outcomes": {k: [o.text, o.is_error] for k, o in snapshot.outcomes.items()},
    }
    if snapshot.sub is not None:  # a sub-turn waiting inside this step (palui.agent.subturn)
        data["sub"] = {
            "call": _call_json(snapshot.sub.call),
            "snapshot": _snapshot_json(snapshot.sub.snapshot),
        }
    return data


def _snapshot(data: dict[str, Any]) -> TurnSnapshot:
    sub = data.get("sub")
    return TurnSnapshot(
        messages=tuple(_message(m) for m in data["messages"]),
        steps=data["steps"],
        usage=Usage(*data["usage"]),
        partial=tuple(data["partial"]),
        elapsed_s=data["elapsed_s"],
        step_calls=tuple(_call(c) for c in data["step_calls"]),
        outcomes={k: ToolOutcome(text, bool(err)) for k, (text, err) in data["outcomes"].items()},
        sub=SubTurn(_call(sub["call"]), _snapshot(sub["snapshot"])) if sub else None,
    )


def dump_snapshot(snapshot: TurnSnapshot, context: TurnContext) -> str:
    """JSON text of a paused turn and its context."""
    return json.dumps(
        {**_snapshot_json(snapshot), "extra": _context_json(context)}, ensure_ascii=False
    )


def load_snapshot(text: str) -> tuple[TurnSnapshot, TurnContext]:
    data = json.loads(text)
    return _snapshot(data), _context(data.get("extra") or {})
