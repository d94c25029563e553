"""The boundaries Palui's core talks through, as protocols (implementations are injected).

`ChatModel` is implemented by `palui.llm.LiteLLMModel`; `Channel` by the Telegram and console
channels; `InboundSink` by the chat layer's inbox (channels hand it what people send);
`Transcriber` by `palui.llm.transcription`; `Speaker` by `palui.llm.speech`; `Interactions` by
`palui.interact`'s router (the chat layer hands it what is not a turn). The agent and the chat
layer depend on these, never on the libraries or layers behind them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, Protocol, runtime_checkable

from palui.domain import (
    Card,
    Claim,
    Completion,
    ConnectorStatus,
    Fence,
    HeldDecision,
    Inbound,
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

    @property
    def preview_message_id(self) -> int | None: ...

    @property
    def adopted(self) -> bool: ...

    def watch_preview(
        self,
        on_preview: Callable[[int], Awaitable[None]],
        on_sending: Callable[[str], Awaitable[None]] | None = None,
        guard: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Hear the preview's message id as soon as it is sent (to record it), and the first
        preview's text just before it is sent (to find it if the id is never recorded); `guard()`
        before each preview call (it raises `LeaseLost` once the turn's lease is lost)."""
        ...

    def adopt(self, message_id: int) -> None:
        """Show this answer in a preview an interrupted turn left."""
        ...

    async def push(self, delta: str) -> None: ...

    async def finish(self, final_text: str) -> None: ...

    async def close(self) -> None:
        """Stop previewing; the outbox edits the preview into the answer."""
        ...

    async def abort(self, note: str | None = None) -> None: ...

    async def discard(self) -> None:
        """Remove the preview (no answer will fill it)."""
        ...


class Channel(Protocol):
    """Where replies go. Parts are channel-specific (e.g. Telegram's 4096-character pieces)."""

    def streaming_reply(self, chat_id: int) -> ReplyStream | None:
        """A stream for the chat's next answer, or None where the channel doesn't stream."""
        ...

    def render(self, text: str) -> Sequence[Any]: ...

    async def send_part(
        self, chat_id: int, part: Any, *, reply_to: int | None = None
    ) -> int | None:
        """Send one part; `reply_to`: as a reply to that message (sent anyway if it is gone).
        Returns the message id (None: a channel without ids)."""
        ...

    async def edit_part(self, chat_id: int, message_id: int, part: Any) -> None:
        """Make an existing message (a streamed preview) show `part`. Showing it already counts
        as done, so repeating an edit is harmless. Raises a permanent `ChannelError` when the
        message can't be edited (deleted, too old), a transient one when it may work later."""
        ...

    async def delete_message(self, chat_id: int, message_id: int) -> None:
        """Remove a message; raises `ChannelError` when it can't be."""
        ...

    def newest_sent_id(self, chat_id: int) -> int | None:
        """The newest message this process has sent in the chat (None: none it knows of)."""
        ...

    async def find_unrecorded(self, chat_id: int, floor: int, text: str) -> int | None:
        """A message of ours sent above message `floor` and showing `text`, whose id a crash
        kept from being recorded; None when none is found within a few probes. Each probe edits
        a candidate to `text` (a channel that can't look returns None)."""
        ...

    async def find_part(
        self, chat_id: int, floor: int, part: Any, skip: Collection[int]
    ) -> int | None:
        """`find_unrecorded` for a reply part (`render`'s), edited exactly as `send_part` sends
        it; the ids in `skip` are other messages of ours and are never edited."""
        ...

    async def send_voice(
        self, chat_id: int, audio: bytes, *, reply_to: int | None = None
    ) -> int | None:
        """Send OGG/Opus audio as a voice message; the message id (None: a channel without
        voice, which sends nothing). Raises `ChannelError` when it can't be sent."""
        ...

    async def send_notice(self, chat_id: int, text: str) -> None:
        """Best effort, not stored: e.g. the refusal a stranger gets."""
        ...

    async def typing(self, chat_id: int) -> None: ...

    async def send_card(self, chat_id: int, card: Card, *, reply_to: int | None = None) -> int:
        """Send a card (`reply_to`: threaded to that message, as in a group); its message id."""
        ...

    async def edit_card(self, chat_id: int, message_id: int, card: Card) -> None:
        """Replace a card's text and buttons (no buttons: they are removed)."""
        ...

    async def answer_callback(self, callback_query_id: str, text: str) -> None: ...

    async def react(self, chat_id: int, message_id: int, emoji: str) -> None:
        """Best effort: mark a person's message with an emoji reaction (👀: seen, queued)."""
        ...

    async def download(self, file_id: str, max_bytes: int) -> bytes:
        """A file a person sent (`Attachment.file_id`). Raises `FileTooLarge` past `max_bytes`
        (or the channel's own limit), `ChannelError` when it can't be fetched or the channel
        holds no files (the console)."""
        ...


class Transcriber(Protocol):
    """Speech to text (`palui.llm.transcription`)."""

    async def transcribe(self, audio: bytes, file_name: str, mime_type: str | None) -> str:
        """The words heard; raises `ModelError` (or `ModelUnavailable`) when it can't."""
        ...


class Speaker(Protocol):
    """Text to speech (`palui.llm.speech`)."""

    name: str

    async def speak(self, text: str) -> bytes:
        """OGG/Opus audio of `text`; raises `ModelError` when it can't."""
        ...


class InboundSink(Protocol):
    """Where a channel puts what people send (palui.chat.inbox)."""

    def is_allowed(self, user_id: int) -> bool: ...

    async def accept(self, inbound: Inbound) -> bool:
        """Store the event; once this returns the channel may acknowledge it. False when it was
        not stored (a stranger's, or one already stored)."""
        ...


class Interactions(Protocol):
    """What a person taps or types that is not a turn: commands and button taps."""

    def owns(self, inbound: Inbound) -> bool:
        """Whether the inbound is answered here at once, rather than by the chat's next turn."""
        ...

    async def handle(self, inbound: Inbound) -> bool:
        """Answer it and mark it done in the inbox; a reply is left in the outbox for the chat
        layer to send. True when a paused turn of the chat can now resume."""
        ...


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


class Fences(Protocol):
    """The leases this process holds (`palui.chat.leases`): may work under a fence still act?"""

    async def confirm(self, fence: Fence) -> None:
        """Raise `palui.errors.LeaseLost` unless `fence` is still the lease's current take."""
        ...
