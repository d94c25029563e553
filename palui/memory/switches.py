"""The recall card's three switches and how auto-recall has been doing ("skipped 4 of last 20")."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from palui.domain import CheckOutcome

SKIP_WINDOW = 20  # the skip rate is over the last this-many checks


class Switch(StrEnum):
    AUTO_RECALL = "auto_recall"
    AUTO_SAVE = "auto_save"
    MEMORY_TOOLS = "memory_tools"

    @property
    def label(self) -> str:
        return {"auto_recall": "Auto-recall", "auto_save": "Auto-save"}.get(
            self.value, "Memory tools"
        )


@dataclass(frozen=True, slots=True)
class SwitchState:
    auto_recall: bool = True
    auto_save: bool = True
    memory_tools: bool = True

    def get(self, switch: Switch) -> bool:
        return bool(getattr(self, switch.value))


def skip_rate(outcomes: Sequence[str]) -> str:
    """ "skipped 4 of last 20", plus timeouts and failures when there were any."""
    if not outcomes:
        return "no checks yet"
    counts = Counter(outcomes)
    text = f"skipped {counts[CheckOutcome.SKIPPED]} of last {len(outcomes)}"
    if counts[CheckOutcome.TIMED_OUT]:
        text += f", {counts[CheckOutcome.TIMED_OUT]} timed out"
    if counts[CheckOutcome.FAILED]:
        text += f", {counts[CheckOutcome.FAILED]} failed"
    return text
