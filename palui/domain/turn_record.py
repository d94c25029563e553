"""What a turn's rows are written with: the turn's own when it starts and when it ends
(`palui.db.turns`), and the key of each of its calls' records (`palui.db.calls`). One value
each, built by the turn, in place of a dozen parameters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field

from palui.domain import Fence, Taint, TurnKind, TurnStatus


@dataclass(frozen=True, slots=True)
class TurnStart:
    """A running turn, and the person's messages it starts on (once per update).

    `session_id=None`: the chat's open session, read by the turn's own INSERT (created on first
    contact). `untrusted`: per update, someone else's words in it (already fenced), stored as
    tainted messages before the person's own; `taint` is then the turn's starting taint,
    recorded now so later turns name it even if this one never ends. `requester_id`: whose
    message started the turn (a group's `[groups] approver = "requester"`); `reply_to`: the
    message its answer is threaded to. `model`: a job's model (a chat turn's comes from its chat's
    row, read by the turn's own INSERT); `authors`: the label the model sees beside each
    group message's words. Under a `fence` (the chat lease the turn runs under)
    nothing is written once another process took the lease over: `LeaseLost`."""

    turn_id: str
    chat_id: int
    inputs: Sequence[tuple[int, str]] = ()  # (update id, the person's words)
    _: KW_ONLY
    kind: TurnKind = TurnKind.CHAT
    session_id: int | None = None
    untrusted: Mapping[int, Sequence[str]] = field(default_factory=dict)
    taint: Taint | None = None
    requester_id: int | None = None
    reply_to: int | None = None
    fence: Fence | None = None
    model: str | None = None  # the model it asks (None: the default)
    voice: bool = False  # it answers a voice note: spoken too if the chat has /voice on
    authors: Mapping[int, str] = field(default_factory=dict)  # per update, a group's author
    trace_id: str | None = None  # its span's trace id (`palui.observe`); None: tracing off


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """A turn's end: its reply into history and the outbox, its messages' inbox rows done.

    `remember=False`: the reply is sent but left out of the history. `preview_message_id`: the
    reply's first part is delivered as an edit of that message (the turn's streamed preview).
    `taint`: what the turn read that it must carry. Under a `fence` (the chat lease the turn
    runs under) nothing is written once another process took the lease over: `LeaseLost`.
    `waits`: the model could not be reached before anything changed (`palui.turns.outage`):
    a job's run goes back to queued and a webhook's delivery stays unhandled, to run again
    once the model is back (a delivery is otherwise handled by its turn's end); a chat turn's
    messages (`kept`) stay pending, and the attempt their turn counted is taken back: a wait
    is no failure (`palui.chat.attempts`), so a flapping provider never earns an apology."""

    turn_id: str
    status: TurnStatus
    update_ids: Sequence[int]  # the messages it answered (none: a resumed turn, unpaused)
    _: KW_ONLY
    reply: str | None = None
    remember: bool = True
    steps: int = 0
    budget_hit: str | None = None
    error: str | None = None
    taint: Taint | None = None
    preview_message_id: int | None = None
    fence: Fence | None = None
    waits: bool = False
    kept: Sequence[int] = ()  # a waiting chat turn's messages, left pending


@dataclass(frozen=True, slots=True)
class CallKey:
    """Which call a record is: by turn, model step and call id (a held call's record is the
    one its approval and execution are added to when the turn resumes, in any process)."""

    turn_id: str
    chat_id: int
    step: int
    call_id: str
