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
    """A `CallRecorder` in memory: (tool, status, result) per call."""

    def __init__(self) -> None:
        self.records: dict[int, dict[str, Any]] = {}
        self.decisions: list[tuple[str, str, str, str, str]] = []

    async def call_started(self, turn_id: str, step: int, tool: str, arguments: str) -> int:
        record = len(self.records) + 1
        self.records[record] = {"tool": tool, "status": "running", "step": step}
        return record

    async def call_ended(self, record_id: int, status: str, result: str, duration_s: float):
        self.records[record_id].update(status=status, result=result)

    async def decision_recorded(
        self, turn_id, step, tool, tool_class, decision, decision_id, reason
    ):
        self.decisions.append((tool, str(tool_class), str(decision), decision_id, reason))


async def no_usage(completion: Completion, latency: float) -> None:
    await asyncio.sleep(0)
