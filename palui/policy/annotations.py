"""A connector's own marks (MCP tool annotations), and how far Palui believes them.

Marks are promises from the server, so they can make a class stricter than inference finds but
never laxer: `readOnlyHint: true` stands only while inference sees no sign of change. An
annotations object without readOnlyHint, destructiveHint or consequentialHint (a title, or only
openWorldHint) is no mark at all. A hint that is present but not true/false can't be read and
counts as destructive.

`openWorldHint` sets no class: it says whether the tool reaches beyond the server's own
application, which Palui shows as "off-site" beside the class and never asks about by itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from palui.policy.classes import ToolClass
from palui.policy.inference import Inference

_NAMES = {
    "read_only": ("readOnlyHint", "read_only_hint"),
    "destructive": ("destructiveHint", "destructive_hint"),
    "consequential": ("consequentialHint", "consequential_hint"),
    "idempotent": ("idempotentHint", "idempotent_hint"),
}
_OPEN_WORLD = ("openWorldHint", "open_world_hint")


@dataclass(frozen=True, slots=True)
class Marks:
    read_only: bool | None = None
    destructive: bool | None = None
    consequential: bool | None = None
    idempotent: bool = False
    unreadable: str | None = None  # the first class hint that is not true or false

    @property
    def tool_class(self) -> ToolClass | None:
        """The class the marks alone give; None when the server marked nothing."""
        if self.unreadable or self.destructive or self.consequential:
            return ToolClass.DESTRUCTIVE
        if self.read_only:
            return ToolClass.READ
        if self.destructive is False or self.consequential is False:
            return ToolClass.WRITE
        if self.read_only is False:
            return ToolClass.DESTRUCTIVE  # MCP's default for destructiveHint
        return None

    @property
    def defaulted(self) -> bool:
        """Destructive only by a default: an unreadable hint, or readOnlyHint false with
        destructiveHint unset (MCP's default), not a hint that says it destroys."""
        if self.destructive or self.consequential:
            return False
        return bool(self.unreadable) or self.tool_class is ToolClass.DESTRUCTIVE

    @property
    def reason(self) -> str:
        if self.unreadable == "annotations":
            return "its annotations are not an object"
        if self.unreadable:
            return f"annotation '{self.unreadable}' is not true or false"
        if self.destructive:
            return "marked destructive (destructiveHint)"
        if self.consequential:
            return "marked consequential (consequentialHint)"
        if self.read_only:
            return "marked read-only (readOnlyHint)"
        if self.destructive is False or self.consequential is False:
            return "marked as changing things, not destructive"
        if self.read_only is False:
            return "marked not read-only, destructiveHint unset (MCP default: destructive)"
        return "no marks"

    @property
    def label(self) -> str:
        """How the marks read in a conflict line: "marked read-only, but ..."."""
        if self.tool_class is ToolClass.READ:
            return "marked read-only"
        return "marked not destructive"


def read_marks(annotations: Mapping[str, Any] | None) -> Marks:
    if not isinstance(annotations, Mapping):
        return Marks()
    if annotations.get("annotations") is not None:  # sent as something other than an object
        return Marks(unreadable="annotations")
    found: dict[str, bool | None] = {}
    unreadable = None
    for field, names in _NAMES.items():
        present = [name for name in names if annotations.get(name) is not None]
        value = annotations.get(present[0]) if present else None
        if value is not None and not isinstance(value, bool):
            unreadable = unreadable or (present[0] if field != "idempotent" else None)
            value = None
        found[field] = value
    return Marks(
        read_only=found["read_only"],
        destructive=found["destructive"],
        consequential=found["consequential"],
        idempotent=found["idempotent"] is True,
        unreadable=unreadable,
    )


def open_world(annotations: Mapping[str, Any] | None) -> bool | None:
    """What the tool's `openWorldHint` says; None when it says nothing readable (MCP's default
    is then true: the tool reaches beyond its server's application)."""
    if not isinstance(annotations, Mapping):
        return None
    value = next((annotations[n] for n in _OPEN_WORLD if annotations.get(n) is not None), None)
    return value if isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class Verdict:
    """The class after weighing marks against inference."""

    tool_class: ToolClass
    marks_hold: bool  # the marks set the class; False when inference found something stricter
    reason: str
    conflict: str | None = None


def weigh(marks: Marks, inference: Inference) -> Verdict | None:
    """Believe the marks unless inference sees a stricter class; None when there are no marks."""
    marked = marks.tool_class
    if marked is None:
        return None
    seen = inference.tool_class
    change = inference.change
    if seen is None or seen.rank <= marked.rank or change is None:
        return Verdict(marked, True, marks.reason)
    return Verdict(seen, False, change.text, conflict=f"{marks.label}, but {change.text}")
