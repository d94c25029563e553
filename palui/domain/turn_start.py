"""What a turn is recorded as when it starts (`palui.db.turns.TurnRepo.start`): one value in
place of a dozen parameters, built by the turn that starts it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field

from palui.domain import Fence, Taint, TurnKind


@dataclass(frozen=True, slots=True)
class TurnStart:
    """A running turn, and the person's messages it starts on (once per update).

    `session_id=None`: the chat's open session, read by the turn's own INSERT (created on first
    contact). `untrusted`: per update, someone else's words in it (already fenced), stored as
    tainted messages before the person's own; `taint` is then the turn's starting taint,
    recorded now so later turns name it even if this one never ends. `requester_id`: whose
    message started the turn (a group's `[groups] approver = "requester"`); `reply_to`: the
    message its answer is threaded to. Under a `fence` (the chat lease the turn runs under)
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
