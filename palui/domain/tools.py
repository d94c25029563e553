"""A tool's settings as stored: switched on or off and classed in the chat, and the hash of the
definition it was last seen with (a change asks for a new look)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ToolSettingRecord:
    tool: str
    enabled: bool
    tool_class: str | None
    definition_hash: str | None
    needs_review: bool
