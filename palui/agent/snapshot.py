"""A paused turn as JSON, so it can wait in the database and resume in any process."""

from __future__ import annotations

import json
from typing import Any

from palui.agent.turn import TurnSnapshot
from palui.domain import Message, Role, ToolCallRequest, ToolOutcome, Usage


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


def dump_snapshot(snapshot: TurnSnapshot, extra: dict[str, Any] | None = None) -> str:
    """JSON text of a snapshot; `extra` carries the caller's own context (taint, offer, ...)."""
    return json.dumps(
        {
            "messages": [_message_json(m) for m in snapshot.messages],
            "steps": snapshot.steps,
            "usage": [snapshot.usage.prompt_tokens, snapshot.usage.completion_tokens],
            "partial": list(snapshot.partial),
            "elapsed_s": snapshot.elapsed_s,
            "step_calls": [_call_json(c) for c in snapshot.step_calls],
            "outcomes": {k: [o.text, o.is_error] for k, o in snapshot.outcomes.items()},
            "extra": extra or {},
        },
        ensure_ascii=False,
    )


def load_snapshot(text: str) -> tuple[TurnSnapshot, dict[str, Any]]:
    data = json.loads(text)
    snapshot = TurnSnapshot(
        messages=tuple(_message(m) for m in data["messages"]),
        steps=data["steps"],
        usage=Usage(*data["usage"]),
        partial=tuple(data["partial"]),
        elapsed_s=data["elapsed_s"],
        step_calls=tuple(_call(c) for c in data["step_calls"]),
        outcomes={k: ToolOutcome(text, bool(err)) for k, (text, err) in data["outcomes"].items()},
    )
    return snapshot, data.get("extra", {})
