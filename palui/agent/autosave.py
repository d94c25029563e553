"""Auto-save: what of a slice of a session goes into long-term memory (DESIGN §1.7).

Only the person's own messages and Palui's final replies (the history holds nothing else: tool
calls and results stay in the turn's own record). A turn that read untrusted content is skipped
whole, its person's messages too, so a poisoned tool result can't come back through a reply that
quotes it. A turn that has not ended yet is skipped as well (it may still read such content).
Each memory's source id names the session and its message range, so saving the same slice again
stores nothing new.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from palui.agent.compaction import Transcribed, transcript

MEMORY_CHARS = 30_000  # recall's limit is 32,000 per memory
TAGS = ("conversation",)


@dataclass(frozen=True, slots=True)
class MemoryItem:
    source_id: str
    content: str
    tags: tuple[str, ...] = TAGS


def source_id(session_id: int, first: int, last: int) -> str:
    return f"session:{session_id}:{first}-{last}"


def _turns(messages: Sequence[Transcribed]) -> list[list[Transcribed]]:
    groups: dict[str, list[Transcribed]] = {}
    for message in messages:
        key = message.turn_id or f"message-{message.id}"
        groups.setdefault(key, []).append(message)
    return list(groups.values())


def memory_items(session_id: int, messages: Sequence[Transcribed]) -> list[MemoryItem]:
    """One memory per turn of the slice that may be saved, oldest first."""
    items = []
    for turn in _turns(messages):
        if any(m.tainted or not m.finished for m in turn):
            continue
        text = transcript(turn)
        if not text.strip():
            continue
        if len(text) > MEMORY_CHARS:
            text = text[: MEMORY_CHARS - 1] + "…"
        items.append(MemoryItem(source_id(session_id, turn[0].id, turn[-1].id), text))
    return items
