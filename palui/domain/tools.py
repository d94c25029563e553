"""A tool's settings as stored: switched on or off and classed in the chat, and the hash of the
definition it was last seen with (a change asks for a new look); why a turn was offered a tool."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True, slots=True)
class ToolSettingRecord:
    tool: str
    enabled: bool
    tool_class: str | None
    definition_hash: str | None
    needs_review: bool


class OfferReason(StrEnum):
    """Why a turn was offered a tool (stored with the turn; the web console's turn page)."""

    BUILTIN = "built-in"
    ALL_FIT = "all fit"
    USED = "used before"
    NAMED = "connector named"
    RANKED = "ranked"
    FOUND = "found by search"
    CALLED = "called without being offered"
    RESUMED = "offered before the pause"


@dataclass(frozen=True, slots=True)
class OfferEvent:
    """A tool became callable in a turn, and why (`detail`: the search, or the score)."""

    tool: str
    why: OfferReason
    detail: str
    enabled: int  # how many tools the turn could have been offered
