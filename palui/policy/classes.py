"""Tool classes, where a class came from, and one tool's classification."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ToolClass(StrEnum):
    READ = "read"  # looks things up, changes nothing
    WRITE = "write"  # creates or changes something
    DESTRUCTIVE = "destructive"  # deletes, or can't be undone

    @property
    def rank(self) -> int:
        """Strictness: read < write < destructive (the order above)."""
        return list(ToolClass).index(self)


def stricter(first: ToolClass, second: ToolClass) -> ToolClass:
    """The stricter of two classes (the first when they are equal)."""
    return second if second.rank > first.rank else first


class ClassSource(StrEnum):
    YOU = "you"  # the operator: kinds file or connector card
    ASSISTANT = "assistant"  # a model proposed it, unconfirmed: it may only make a class stricter
    ANNOTATION = "annotation"  # the connector's own MCP hints
    CATALOGUE = "catalogue"  # a kinds-file entry taken from a catalogue of tools (their marks)
    INFERRED = "inferred"  # read from the tool's name, description and arguments
    UNSURE = "unsure"  # nothing could tell: destructive, to fail closed


@dataclass(frozen=True, slots=True, kw_only=True)
class Classification:
    """One tool's class, whether it sends out, and why."""

    tool_class: ToolClass
    sends_out: bool
    source: ClassSource
    reason: str
    definition_hash: str
    conflict: str | None = None  # a mark the classification did not believe, and why
    idempotent: bool = False  # the server's idempotentHint: may skip a second card on retry

    @property
    def unsure(self) -> bool:
        return self.source is ClassSource.UNSURE

    def explain(self) -> str:
        """One line for `palui kinds explain` and the connector card."""
        sends = ", sends out" if self.sends_out else ""
        line = f"{self.tool_class}{sends} ({self.source}: {self.reason})"
        if self.conflict:
            line += f"; {self.conflict}"
        return line
