"""What the model reads of a call's result: cut to the turn's limit, or an unknown outcome."""

from __future__ import annotations

UNKNOWN_OUTCOME = (
    "Unknown outcome: the call did not finish in time, so the action may or may not have "
    "happened. Check before retrying, or tell the user."
)


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}\n[… truncated: {cut:,} more characters]"
