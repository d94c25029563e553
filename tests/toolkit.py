"""In-process stand-ins for the agent's ports: a scripted model and a toolset of Python functions.

They implement the same protocols as the real adapters (palui.ports), so the agent loop and the
tool executor are tested through their public surface without a network.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from palui.domain import (
    Completion,
    ConnectorState,
    ConnectorStatus,
    Message,
    RemoteTool,
    ToolCallRequest,
    ToolOutcome,
    ToolSpec,
    Usage,
)

Step = Completion | Callable[[list[Message]], Awaitable[Completion]]


def answer(text: str, usage: tuple[int, int] = (10, 5)) -> Completion:
    return Completion("scripted", text, usage=Usage(*usage))


def call(
    name: str, arguments: dict[str, Any] | str | None = None, call_id: str = "c1"
) -> Completion:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return Completion("scripted", "", (ToolCallRequest(call_id, name, raw),), Usage(10, 5))


class ScriptedModel:
    """A `ChatModel` that answers from a list of steps; records what it was sent."""

    name = "scripted"

    def __init__(self, steps: Sequence[Step] = (), *, forever: Step | None = None) -> None:
        self.steps = list(steps)
        self.forever = forever
        self.calls: list[tuple[list[Message], list[ToolSpec]]] = []

    async def complete(self, messages, tools=(), *, on_delta=None) -> Completion:
        self.calls.append((list(messages), list(tools)))
        step = self.steps.pop(0) if self.steps else self.forever
        if step is None:
            raise AssertionError("the model was called more often than scripted")
        if isinstance(step, Completion):
            return step
        return await step(list(messages))

    async def ping(self) -> str:
        return self.name


class FunctionToolset:
    """A `Toolset` whose tools are async Python functions, marked read, write or destructive."""

    def __init__(
        self,
        connector_id: str,
        functions: dict[str, Callable[..., Awaitable[str]]],
        *,
        read_only: Sequence[str] = (),
        destructive: Sequence[str] = (),
        descriptions: dict[str, str] | None = None,
        state: ConnectorState = ConnectorState.CONNECTED,
        trust: str = "trusted",  # tests about taint say "untrusted" on purpose
    ) -> None:
        self.id = connector_id
        self.trust = trust
        self.state = state
        self._functions = functions
        self._read_only = set(read_only)
        self._destructive = set(destructive)
        self._descriptions = descriptions or {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tools(self) -> list[RemoteTool]:
        return [
            RemoteTool(
                name,
                self._descriptions.get(name, f"{name.replace('_', ' ')}"),
                {"type": "object", "properties": {}},
                {"readOnlyHint": True}
                if name in self._read_only
                else {"readOnlyHint": False, "destructiveHint": name in self._destructive},
            )
            for name in self._functions
        ]

    def status(self) -> ConnectorStatus:
        return ConnectorStatus(self.id, self.state, len(self._functions), trust=self.trust)

    async def call(self, tool: str, arguments: dict[str, Any], *, timeout_s=None) -> ToolOutcome:
        self.calls.append((tool, arguments))
        return ToolOutcome(await self._functions[tool](**arguments))


class MemoryRecorder:
    """A `CallStore` in memory: a record per call (tool, status, result, step, stages)."""

    def __init__(self) -> None:
        self.records: dict[int, dict[str, Any]] = {}
        self.decisions: list[tuple[str, str, str, str, str]] = []
        self._keys: dict[tuple[str, int, str], int] = {}

    async def save(self, key, change, *, earlier=(), row_id=None, fresh=False, riders=None) -> int:
        """As `CallRecordRepo.save`: the `earlier` changes a call's record waited for, then
        `change`. `riders` are left alone: in memory nothing carries them (the turn's end does)."""
        for each in (*earlier, change):
            self._apply(key.turn_id, key.step, key.call_id, each)
        return self._keys[(key.turn_id, key.step, key.call_id)]

    def _apply(self, turn_id: str, step: int, call_id: str, change) -> None:
        key = (turn_id, step, call_id)
        if key not in self._keys:
            self._keys[key] = len(self.records) + 1
            self.records[self._keys[key]] = {"tool": change.tool, "status": "pending",
                                             "step": step, "stages": []}  # fmt: skip
        record = self.records[self._keys[key]]
        if change.status is not None:
            record["status"] = str(change.status)
        if change.result is not None:
            record["result"] = change.result
        if change.stage is not None:
            record["stages"].append((str(change.stage.stage), change.stage.outcome))
        if change.decision is not None and change.status is None:
            self.decisions.append((change.tool, str(change.tool_class), change.decision,
                                   change.decision_id, change.reason))  # fmt: skip

    async def sends_since(self, since, exempt=()) -> int:
        return 0

    async def first_cap_notice(self, chat_id: int, day: str) -> bool:
        return True


async def no_usage(completion: Completion, latency: float) -> None:
    await asyncio.sleep(0)
