"""The boundaries Palui's core talks through, as protocols (implementations are injected).

`ChatModel` is implemented by `palui.llm.LiteLLMModel`; `Channel` by the Telegram and console
channels. The agent and the service depend on these, never on the libraries behind them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from palui.domain import (
    Card,
    Claim,
    Completion,
    ConnectorStatus,
    Message,
    RemoteTool,
    ToolCallRequest,
    ToolOutcome,
    ToolSpec,
    TurnScope,
)

DeltaHandler = Callable[[str], Awaitable[None]]


class ChatModel(Protocol):
    """A language model reached one call at a time."""

    name: str

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        on_delta: DeltaHandler | None = None,
    ) -> Completion: ...

    async def ping(self) -> str: ...


class ReplyStream(Protocol):
    """An answer shown while the model writes it (see palui.channels.streaming)."""

    @property
    def message_ids(self) -> tuple[int, ...]: ...

    async def push(self, delta: str) -> None: ...

    async def finish(self, final_text: str) -> None: ...

    async def abort(self, note: str | None = None) -> None: ...


class Channel(Protocol):
    """Where replies go. Parts are channel-specific (e.g. Telegram's 4096-character pieces)."""

    def streaming_reply(self, chat_id: int) -> ReplyStream | None:
        """A stream for the chat's next answer, or None where the channel doesn't stream."""
        ...

    def render(self, text: str) -> Sequence[Any]: ...

    async def send_part(self, chat_id: int, part: Any) -> None: ...

    async def send_notice(self, chat_id: int, text: str) -> None:
        """Best effort, not stored: e.g. the refusal a stranger gets."""
        ...

    async def typing(self, chat_id: int) -> None: ...

    async def send_card(self, chat_id: int, card: Card) -> int:
        """Send a card; returns its message id."""
        ...

    async def edit_card(self, chat_id: int, message_id: int, card: Card) -> None:
        """Replace a card's text and buttons (no buttons: they are removed)."""
        ...

    async def answer_callback(self, callback_query_id: str, text: str) -> None: ...


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


class CallRecorder(Protocol):
    """Where each tool call is recorded, before it goes out and when it ends."""

    async def call_started(self, turn_id: str, step: int, tool: str, arguments: str) -> int: ...

    async def call_ended(
        self, record_id: int, status: str, result: str, duration_s: float
    ) -> None: ...

    async def decision_recorded(
        self,
        turn_id: str,
        step: int,
        tool: str,
        tool_class: str,
        decision: str,
        decision_id: str,
        reason: str,
    ) -> None: ...


class Ledger(Protocol):
    """The action ledger: world-changing calls are claimed before they go out."""

    async def claim(
        self, key: str, chat_id: int, tool: str, arguments: str, turn_id: str | None
    ) -> Claim: ...

    async def settle(self, action_id: int, state: str, result: str) -> None: ...
