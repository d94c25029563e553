"""Taint as provenance (DESIGN §1.1): where a turn's untrusted content came from, and what
carried it into a later turn. Stored on turns and messages as a label (`Taint.label`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TaintVia(StrEnum):
    """What carried untrusted content into a later turn (DESIGN §1.1: taint is provenance)."""

    MEMORY = "memory"  # a memory saved in a tainted turn, recalled or read with a memory tool
    JOB = "job"  # a job created in a tainted turn: each of its runs


# The `connector` of someone else's words the person brought (a forwarded message, a quoted
# message, a document): no connector id can be this (they are `mcp-<slug>`, `recall`, `palui`).
FOREIGN = "foreign"
FOREIGN_LABEL_CHARS = 120  # turns store a label in 160 characters, with room for "memory>foreign:"
# The `connector` of a webhook's payload is "webhook:<name>" (no connector id starts so).
WEBHOOK = "webhook:"


@dataclass(frozen=True, slots=True)
class Taint:
    """Where a turn's untrusted content came from: what a card's "why" names (DESIGN §1.1).

    `connector` is a connector id ("mcp-web"), "webhook:<name>" for a webhook payload, `FOREIGN`
    for someone else's words in the person's message (`tool` is then how a card names them: "a
    forwarded message from Ana"), or "an earlier summary" / "an earlier message" when only that
    much is known. `via` says what
    carried it here from the turn that read it (a memory, a job), when it did not arrive in
    this conversation directly."""

    connector: str
    tool: str | None = None  # full tool name, when a tool result brought it in
    turns_ago: int | None = None  # None or 0: this turn
    via: TaintVia | None = None

    @classmethod
    def foreign(cls, label: str) -> Taint:
        """Someone else's words the person brought, named as a card completes "this turn read
        …" (`palui.domain.media.Foreign.label`), cut to fit the stored label."""
        if len(label) > FOREIGN_LABEL_CHARS:
            label = label[: FOREIGN_LABEL_CHARS - 1].rstrip() + "…"
        return cls(FOREIGN, label)

    @classmethod
    def webhook(cls, name: str) -> Taint:
        """A webhook's payload: named by its webhook ("webhook:github")."""
        return cls(f"{WEBHOOK}{name}")

    @property
    def source(self) -> str:
        """What a card names as the source: the connector, or the foreign words' label."""
        if self.connector == FOREIGN and self.tool:
            return self.tool
        return self.connector

    @property
    def is_foreign(self) -> bool:
        return self.connector == FOREIGN and bool(self.tool)

    def carried(self, turns: int = 1) -> Taint:
        """The same source seen from a turn `turns` later in the conversation."""
        return Taint(self.connector, self.tool, (self.turns_ago or 0) + turns, self.via)

    def through(self, via: TaintVia) -> Taint:
        """The same source, carried into another turn by a memory or a job."""
        return Taint(self.connector, self.tool, None, via)

    @property
    def origin(self) -> str:
        """The source alone ("mcp-web:mcp-web__fetch"): what a memory or a job stores."""
        return f"{self.connector}:{self.tool}" if self.tool else self.connector

    @property
    def label(self) -> str:
        """How a turn row stores it ("mcp-web:mcp-web__fetch", "memory>mcp-web:…" when a memory
        carried it); `from_label` reads it back."""
        return f"{self.via}>{self.origin}" if self.via else self.origin

    @classmethod
    def from_label(cls, label: str, turns_ago: int | None = None) -> Taint:
        # ">" appears in no connector id, tool or webhook name, so labels stored before `via`
        # read as they always have.
        carrier, sep, rest = label.partition(">")
        via = None
        if sep and carrier in tuple(TaintVia):
            via, label = TaintVia(carrier), rest
        # A webhook's connector holds a ":" of its own ("webhook:github"): the next one splits.
        # Otherwise the first ":" does ("mcp-web:mcp-web__fetch"); a foreign label's tool may
        # hold more.
        webhook = label.startswith(WEBHOOK)
        connector, _, tool = label.removeprefix(WEBHOOK).partition(":")
        return cls(WEBHOOK + connector if webhook else connector, tool or None, turns_ago, via)
