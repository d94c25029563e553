"""The policy matrix: whether a tool is offered, and whether a call runs or asks first.

| class       | chat | tainted chat | scheduled   | webhook     |
|-------------|------|--------------|-------------|-------------|
| read        | run  | run          | run         | not offered |
| write       | run  | ask          | ask         | not offered |
| destructive | ask  | ask          | not offered | not offered |

A tainted scheduled turn is treated like any scheduled turn (already as strict). An unknown
class is destructive; an unknown turn kind gets no tools.

A connector's width (`[mcp.<name>] allow`, or set by the person on /connectors) moves only the
clean chat column: `reads` makes its writes ask too, `all` lets its destructive calls run
(`writes`, the default, is the table as drawn). Tainted, scheduled and webhook turns are never
loosened by it; an unknown width is `reads`, the strictest. On top of the table: in a tainted turn
a call that sends out to a destination the person did not give asks first, whatever its class
(`palui.policy.named` says which destinations those are).
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum

from palui.domain import Taint, TurnKind
from palui.policy.classes import ToolClass
from palui.policy.named import Unnamed
from palui.policy.taint_rule import describe_taint


class Width(StrEnum):
    """What of a connector runs without a card in a clean chat turn."""

    READS = "reads"
    WRITES = "writes"  # the default: the table as drawn
    ALL = "all"


class Decision(StrEnum):
    RUN = "run"
    ASK = "ask"  # an approval card first
    NOT_OFFERED = "not_offered"  # the model never sees the tool
    REFUSED = "refused"  # a call to a tool that was not offered (a made-up or stale name)


def _known_class(tool_class: ToolClass | str | None) -> ToolClass:
    try:
        return ToolClass(tool_class) if tool_class is not None else ToolClass.DESTRUCTIVE
    except ValueError:
        return ToolClass.DESTRUCTIVE


def _known_kind(kind: TurnKind | str) -> TurnKind:
    try:
        return TurnKind(kind)
    except ValueError:
        return TurnKind.WEBHOOK  # the kind with no tools


def known_width(width: Width | str | None) -> Width:
    if width is None:
        return Width.WRITES
    try:
        return Width(width)
    except ValueError:
        return Width.READS  # fail closed: a width nobody can read loosens nothing


def decide(
    tool_class: ToolClass | str | None,
    kind: TurnKind | str,
    tainted: bool,
    width: Width | str | None = Width.WRITES,
) -> Decision:
    tool_class, kind, width = _known_class(tool_class), _known_kind(kind), known_width(width)
    if kind is TurnKind.WEBHOOK:
        return Decision.NOT_OFFERED
    if tool_class is ToolClass.READ:
        return Decision.RUN
    if kind is TurnKind.SCHEDULED:
        return Decision.ASK if tool_class is ToolClass.WRITE else Decision.NOT_OFFERED
    if tainted:
        return Decision.ASK
    if tool_class is ToolClass.WRITE:
        return Decision.ASK if width is Width.READS else Decision.RUN
    return Decision.RUN if width is Width.ALL else Decision.ASK


def cell(
    tool_class: ToolClass | str | None,
    kind: TurnKind | str,
    tainted: bool,
    width: Width | str | None = Width.WRITES,
) -> str:
    """The table's cell a decision was read from, in words (`palui runs explain`)."""
    tool_class, kind, width = _known_class(tool_class), _known_kind(kind), known_width(width)
    column = f"tainted {kind}" if tainted and kind is TurnKind.CHAT else str(kind)
    decided = decide(tool_class, kind, tainted, width)
    return f"{tool_class} × {column} (width {width}) → {decided}"


def decide_call(
    tool_class: ToolClass | str | None,
    kind: TurnKind | str,
    tainted: bool,
    *,
    unnamed: Unnamed | None = None,
    width: Width | str | None = Width.WRITES,
) -> Decision:
    """The decision for a call the model made: a tool that is not offered is refused; in a
    tainted turn a call that sends to a destination the person did not give (`unnamed`) asks."""
    decision = decide(tool_class, kind, tainted, width)
    if decision is Decision.NOT_OFFERED:
        return Decision.REFUSED
    if decision is Decision.RUN and tainted and unnamed:
        return Decision.ASK
    return decision


def decision_id(
    tool: str,
    tool_class: ToolClass | str,
    decision: Decision | str,
    kinds_digest: str | None,
    infer: bool,
    definition_hash: str,
    width: Width | str | None = Width.WRITES,
) -> str:
    """A short stable id for a decision and everything it rested on (the default width adds
    nothing, so ids from before widths existed still read the same)."""
    basis = [tool, str(tool_class), str(decision), kinds_digest, bool(infer), definition_hash]
    if known_width(width) is not Width.WRITES:
        basis.append(str(known_width(width)))
    text = json.dumps(basis, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _class_reason(
    tool_class: ToolClass,
    kind: TurnKind,
    tainted: bool,
    unsure: bool,
    sends_unnamed: bool,
    width: Width,
) -> str | None:
    """Why the table decides as it does for this class and kind (None: the taint says it)."""
    if tool_class is ToolClass.READ:
        return None if sends_unnamed else "read tools run without asking"
    if tool_class is ToolClass.DESTRUCTIVE:
        if kind is TurnKind.SCHEDULED:
            return "scheduled jobs are not offered destructive tools"
        if width is Width.ALL:
            if tainted:
                return None
            return 'its connector\'s width is "all": it runs without asking in your own turns'
        if unsure:
            return "Palui can't tell what this tool does, so it asks first, as for destructive ones"
        return "destructive tools always ask first"
    if kind is TurnKind.SCHEDULED:
        return "scheduled jobs ask before any write"
    if tainted:
        return None
    if width is Width.READS:
        return 'its connector\'s width is "reads": every write asks first'
    return "writes run at once in a chat turn with no untrusted content"


def why(
    tool_class: ToolClass | str | None,
    kind: TurnKind | str,
    tainted: bool,
    *,
    taint: Taint | None = None,
    unsure: bool = False,
    unnamed: Unnamed | None = None,
    width: Width | str | None = Width.WRITES,
) -> str:
    """The line a card (or a log) shows for the decision. Whenever the call asks in a tainted
    turn it names the taint and its source, whatever the class and the turn's kind."""
    tool_class, kind, width = _known_class(tool_class), _known_kind(kind), known_width(width)
    if kind is TurnKind.WEBHOOK:
        return "webhook summaries run with no tools"
    sends_unnamed = bool(tainted and unnamed)
    reasons = [_class_reason(tool_class, kind, tainted, unsure, sends_unnamed, width)]
    asks = decide_call(tool_class, kind, tainted, unnamed=unnamed, width=width) is Decision.ASK
    if asks and tainted:
        if sends_unnamed and unnamed is not None:
            reasons.append(unnamed.words())
        reasons.append(describe_taint(taint) if taint else "this turn read untrusted content")
    return "; ".join(reason for reason in reasons if reason)
