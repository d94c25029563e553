"""Plain data shared by every layer: frozen dataclasses and enums, no I/O.

This module holds what a turn is made of (messages, completions, tools, cards); each concept's
lifecycle (a `StrEnum` whose values are the strings stored today) and the records its
repositories return live in a module of their own here, and every name is importable from
`palui.domain`. The submodules import nothing from this one, so they load first.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from palui.domain.approvals import ApprovalRecord as ApprovalRecord
from palui.domain.approvals import ApprovalStatus as ApprovalStatus
from palui.domain.approvals import EditConfirmation as EditConfirmation
from palui.domain.approvals import EditRecord as EditRecord
from palui.domain.approvals import EditStatus as EditStatus
from palui.domain.approvals import NewApproval as NewApproval
from palui.domain.approvals import NewEdit as NewEdit
from palui.domain.chat import EVERY_CHAT as EVERY_CHAT
from palui.domain.chat import ChatScope as ChatScope
from palui.domain.chat import Conversation as Conversation
from palui.domain.chat import Fence as Fence
from palui.domain.chat import InboxItem as InboxItem
from palui.domain.chat import InboxStatus as InboxStatus
from palui.domain.chat import OutboxItem as OutboxItem
from palui.domain.chat import TurnStatus as TurnStatus
from palui.domain.chat import UnrecordedPreview as UnrecordedPreview
from palui.domain.jobs import JobRecord as JobRecord
from palui.domain.jobs import RunRecord as RunRecord
from palui.domain.jobs import RunStatus as RunStatus
from palui.domain.ledger import ActionState as ActionState
from palui.domain.ledger import Claim as Claim
from palui.domain.media import Attachment as Attachment
from palui.domain.media import AttachmentKind as AttachmentKind
from palui.domain.media import ChatKind as ChatKind
from palui.domain.media import Foreign as Foreign
from palui.domain.media import ForeignKind as ForeignKind
from palui.domain.memory import CheckOutcome as CheckOutcome
from palui.domain.memory import SaveState as SaveState
from palui.domain.memory import SliceMessage as SliceMessage
from palui.domain.memory import SliceReason as SliceReason
from palui.domain.memory import SliceRecord as SliceRecord
from palui.domain.memory import StoredSwitches as StoredSwitches
from palui.domain.stand_in import StandIn as StandIn
from palui.domain.taint import Taint as Taint
from palui.domain.taint import TaintVia as TaintVia
from palui.domain.tools import OfferEvent as OfferEvent
from palui.domain.tools import OfferReason as OfferReason
from palui.domain.tools import ToolSettingRecord as ToolSettingRecord
from palui.domain.webhooks import Delivery as Delivery

RECALL_ID = "recall"  # the long-term memory connector's id (DESIGN §1.7): recall__search_memories

# Telegram's bot_command shape: /name or /name@bot, then a space or the end.
COMMAND_RE = re.compile(r"^/([A-Za-z0-9_]{1,32})(?:@(\w+))?(?:\s|$)")


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class TurnKind(StrEnum):
    CHAT = "chat"
    SCHEDULED = "scheduled"
    WEBHOOK = "webhook"


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call as the model asked for it."""

    id: str
    name: str
    arguments: str  # raw JSON text as the model produced it


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a model conversation (history or the turn's own steps)."""

    role: Role
    content: str
    tool_calls: tuple[ToolCallRequest, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    # Images sent with a user message, as data URLs, for this turn's model calls only: history
    # stores the message's text (a placeholder such as "[photo: caption]"), never the image.
    images: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as offered to the model (already namespaced `<connectorId>__<tool>`)."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Completion:
    """What one model call returned."""

    model: str  # the model that answered (a fallback, perhaps)
    content: str
    tool_calls: tuple[ToolCallRequest, ...] = ()
    usage: Usage = Usage()
    finish_reason: str | None = None
    stood_in: StandIn | None = None  # set when the primary was refused and a fallback answered


@dataclass(frozen=True, slots=True)
class ChatUser:
    id: int
    username: str | None = None
    first_name: str | None = None

    @property
    def display(self) -> str:
        if self.username:
            return f"@{self.username}"
        return self.first_name or str(self.id)


@dataclass(frozen=True, slots=True)
class Inbound:
    """One thing that happened in a chat, as the service sees it (no Telegram types)."""

    update_id: int
    chat_id: int
    user: ChatUser
    text: str | None  # None for messages Palui can't read (photos, stickers, ...)
    message_id: int | None = None
    edited: bool = False
    callback_query_id: str | None = None
    callback_data: str | None = None
    received_at: datetime | None = None
    bot_username: str | None = None  # this bot's, where the channel knows it (see `command`)
    chat_kind: ChatKind = ChatKind.PRIVATE
    attachment: Attachment | None = None  # `text` is then the caption, if any
    foreign: tuple[Foreign, ...] = ()  # someone else's words in it: untrusted (domain/media.py)
    mentions_bot: bool = False  # a group message that names this bot (`@name`)
    replies_to_bot: bool = False  # it replies to one of this bot's messages
    topic_id: int = 0  # its topic (0: none); `chat_id` is then the topic's key (Conversation)

    @property
    def command(self) -> str | None:
        """`/status args` or `/status@ThisBot args` in a new message -> "status". None for plain
        text (also for "/home/me"), for an edit (commands run only from new messages) and for a
        command addressed to another bot (`addressed_elsewhere`)."""
        match = self._command_match()
        if match is None or self._elsewhere(match) is not None:
            return None
        return match.group(1).lower()

    @property
    def addressed_elsewhere(self) -> str | None:
        """The bot a new message's `/cmd@name` is addressed to when it is not this one, e.g.
        "SomeOtherBot". Where the channel doesn't know this bot's name, every `@name` is."""
        match = self._command_match()
        return self._elsewhere(match) if match is not None else None

    @property
    def names_bot(self) -> bool:
        """A new message's command names this bot: `/new@ThisBot` (unambiguous in a group)."""
        match = self._command_match()
        return match is not None and match.group(2) is not None and self._elsewhere(match) is None

    def _command_match(self) -> re.Match[str] | None:
        if self.edited or self.callback_query_id:
            return None
        return COMMAND_RE.match(self.text or "")

    def _elsewhere(self, match: re.Match[str]) -> str | None:
        name = match.group(2)
        if name is None or (self.bot_username and name.lower() == self.bot_username.lower()):
            return None
        return name


@dataclass(frozen=True, slots=True)
class Reply:
    """A turn's final answer."""

    text: str
    usage: Usage = Usage()
    steps: int = 0
    budget_hit: str | None = None


class ConnectorState(StrEnum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    ERRORED = "errored"
    PAUSED = "paused"
    NEEDS_SIGN_IN = "needs sign-in"  # an OAuth server: a person signs in with /connect


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool as its connector describes it (not yet namespaced)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, Any] | None = None  # MCP ToolAnnotations as a plain dict
    title: str | None = None
    # The server stores the untrusted origin a call carries (the bundled recall's add_memory):
    # a memory written in a tainted turn keeps it. Not part of the definition's hash.
    keeps_origin: bool = False


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool call produced, as text for the model."""

    text: str
    is_error: bool = False
    # Untrusted content from a connector Palui trusts (palui__run_code's output): it taints too.
    untrusted: bool = False
    # Untrusted sources the content came from, as a trusted server reports them (the bundled
    # recall's memories saved in tainted turns): `Taint.origin` labels. They taint the turn.
    origins: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConnectorStatus:
    """One line of /status: how a connector is doing."""

    id: str
    state: ConnectorState
    tool_count: int = 0
    error: str | None = None
    retry_in_s: float | None = None
    trust: str = "untrusted"


@dataclass(frozen=True, slots=True)
class Button:
    label: str
    data: str  # callback data: opaque, at most 64 bytes
    url: str = ""  # set: a button that opens this address instead (its data is unused)


@dataclass(frozen=True, slots=True)
class Card:
    """A chat message with buttons (an approval card); channels decide how to draw it."""

    text: str  # plain text; channels escape it
    buttons: tuple[Button, ...] = ()  # one row
    rows: tuple[tuple[Button, ...], ...] = ()  # or several rows

    @property
    def keyboard(self) -> tuple[tuple[Button, ...], ...]:
        return self.rows or ((self.buttons,) if self.buttons else ())


# A tool's call of another tool of the same turn: its full name, its arguments -> its outcome.
NestedCall = Callable[[str, dict[str, Any]], Awaitable["ToolOutcome"]]


@dataclass(frozen=True, slots=True)
class TurnScope:
    """The turn a tool call belongs to, for tools that act on Palui itself (the built-ins)."""

    turn_id: str
    chat_id: int
    kind: TurnKind
    tainted: bool = False
    taint: Taint | None = None  # where it came from (a job made here records it)
    # How a tool running now calls another one of this turn (palui__run_code's bridge): through
    # the turn's whole pipeline, as if the model had asked. None: it may not.
    nested: NestedCall | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What a paused turn needs to resume as it ran: its kind, its taint, the tools it was
    offered (by full name)."""

    kind: TurnKind = TurnKind.CHAT
    taint: Taint | None = None
    offer: tuple[str, ...] = ()


class Verdict(StrEnum):
    """What became of a call held for approval, as the resumed turn learns it."""

    APPROVED = "approved"  # run it now, once
    DENIED = "denied"
    EXPIRED = "expired"
    CHANGED = "changed"  # the tool changed after the card was shown: the approval no longer fits
    RAN = "ran"  # it ran before a restart: its recorded result stands
    INTERRUPTED = "interrupted"  # it was running when a crash cut it off: never re-fired


@dataclass(frozen=True, slots=True)
class HeldDecision:
    """A person's decision on one held call, as the approvals report it."""

    approval_id: str
    call: ToolCallRequest  # as the card showed it (with a person's edits)
    verdict: Verdict
    model_arguments: str | None = None  # the model's own arguments, when a person edited them
    result: str | None = None  # RAN: the result recorded when it ran


class CallStatus(StrEnum):
    """Where a tool call's record stands (DESIGN §1.6). `running` is written before the call
    goes out, so a crash or a /stop leaves `unknown` behind, never no record."""

    PENDING = "pending"  # in the hooks and guards, not decided yet
    HELD = "held"  # waiting for a person's approval card
    NOT_APPROVED = "not_approved"  # the card was denied, expired or went stale: it never ran
    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    UNKNOWN = "unknown"  # interrupted mid-flight (/stop, crash): may or may not have happened
    REJECTED = "rejected"  # never sent: not offered, bad arguments, a guard, the policy, a cap
    BLOCKED = "blocked"  # a pre hook blocked it
    SUPPLIED = "supplied"  # a pre hook supplied its result
    HOOK_FAILED = "hook_failed"  # a pre hook failed, so the call failed closed
    DUP_COMPLETED = "dup_completed"  # the ledger had it: nothing went out again
    DUP_IN_PROGRESS = "dup_in_progress"
    DUP_UNKNOWN = "dup_unknown"

    @property
    def ran(self) -> bool:
        """The call reached the runner's end (ran, or was settled without running): `palui
        runs` counts these as the turn's calls; a held or unapproved call is only a card."""
        return self not in (CallStatus.PENDING, CallStatus.HELD, CallStatus.NOT_APPROVED)


class CallStage(StrEnum):
    """The stages of a call through the pipeline, in order (DESIGN §1.6)."""

    HOOK = "hook"
    GUARD = "guard"
    POLICY = "policy"
    APPROVAL = "approval"
    DESTINATION = "destination"
    SEND_CAP = "send_cap"
    LEDGER = "ledger"
    EXECUTE = "execute"
    POST_HOOK = "post_hook"


@dataclass(frozen=True, slots=True)
class StageEntry:
    """One stage of a call's story: what happened there and why (`palui runs show`)."""

    stage: CallStage
    outcome: str
    reason: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    duration_s: float | None = None


@dataclass(frozen=True, slots=True)
class CallChange:
    """One write to a call's record: a stage to add and the columns it sets (None: unchanged).

    `settles` replaces the call's running execution entry instead of adding one."""

    tool: str
    stage: StageEntry | None = None
    settles: bool = False
    status: CallStatus | None = None
    tool_class: str | None = None
    class_source: str | None = None  # where the class came from when the policy decided
    sends_out: bool | None = None
    arguments: str | None = None
    model_arguments: str | None = None
    decision: str | None = None
    decision_id: str | None = None
    reason: str | None = None
    result: str | None = None
    went_out: bool = False  # the call is going out now: the daily send cap counts it
    duration_s: float | None = None
    at: datetime | None = None  # when it happened, if it is written later (None: when written)
