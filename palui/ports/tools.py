"""Tools: connectors' toolsets, a turn's runner, and the action ledger."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from palui.domain import (
    Claim,
    ConnectorStatus,
    HeldDecision,
    RemoteTool,
    ToolCallRequest,
    ToolOutcome,
    TurnScope,
)


class Toolset(Protocol):
    """A connector's tools: an MCP server, or Palui's built-ins."""

    @property
    def id(self) -> str: ...

    @property
    def trust(self) -> str: ...

    def tools(self) -> Sequence[RemoteTool]: ...

    def status(self) -> ConnectorStatus: ...

    async def call(
        self, tool: str, arguments: dict[str, Any], *, timeout_s: float | None = None
    ) -> ToolOutcome: ...


@runtime_checkable
class OriginToolset(Protocol):
    """A toolset that can send a call with the untrusted origin of what it carries (an MCP
    connector puts it in the request's `_meta`): how a memory written in a tainted turn keeps
    its origin (DESIGN §1.1)."""

    async def call_with_origin(
        self, tool: str, arguments: dict[str, Any], origin: str
    ) -> ToolOutcome: ...


@runtime_checkable
class ScopedToolset(Protocol):
    """A toolset whose calls need to know their turn (its chat, its kind): Palui's built-ins."""

    async def call_scoped(
        self, scope: TurnScope, tool: str, arguments: dict[str, Any]
    ) -> ToolOutcome: ...


class ToolRunner(Protocol):
    """Runs the tool calls of one turn; the agent loop's only way to reach a tool."""

    def concurrent_safe(self, name: str) -> bool: ...

    async def prepare(self, call: ToolCallRequest, step: int) -> ToolCallRequest | ToolOutcome:
        """The call as it would run (after the operator's hooks and guards), or its outcome if
        they settled it. Asked before `needs_approval`, so a card shows the final arguments."""
        ...

    def needs_approval(self, call: ToolCallRequest) -> bool:
        """Asked right before the call would run (the turn's taint may have changed)."""
        ...

    async def run(self, call: ToolCallRequest, step: int) -> ToolOutcome: ...

    async def run_held(self, decision: HeldDecision, step: int) -> ToolOutcome:
        """A held call once a person decided on it: run once if approved (the approval is used
        up first), else the reason it did not run."""
        ...


@runtime_checkable
class Delegations(Protocol):
    """A turn's runner that also records delegation calls (`palui__delegate`): the agent loop
    runs their sub-turn itself (`palui.agent.subturn`), and the runner records the call."""

    async def delegating(
        self, call: ToolCallRequest, step: int, task: str, *, resumed: bool = False
    ) -> ToolOutcome | None:
        """The sub-turn of `call` starts (or resumes): recorded as running; or why it can't
        (e.g. the tool was switched off since the offer)."""
        ...

    async def delegated(
        self, call: ToolCallRequest, step: int, outcome: ToolOutcome, *, cut_short: bool = False
    ) -> None:
        """The sub-turn ended with `outcome` (its answer, or why it stopped); `cut_short`: it
        was cancelled (/stop), its outcome unknown."""
        ...


class Ledger(Protocol):
    """The action ledger: world-changing calls are claimed before they go out."""

    async def claim(
        self, key: str, chat_id: int, tool: str, arguments: str, turn_id: str | None
    ) -> Claim: ...

    async def settle(self, action_id: int, state: str, result: str) -> None: ...
