"""What one sandboxed run may use: wall clock, memory, output, and calls back into Palui."""

from __future__ import annotations

from dataclasses import dataclass

# Calls of Palui's built-in read tools one run may make through the bridge (never more).
MAX_BRIDGE_CALLS = 50


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    timeout_s: float = 30
    memory_mb: int = 512
    output_chars: int = 8_000
    bridge_calls: int = MAX_BRIDGE_CALLS

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * 1024 * 1024

    @property
    def output_bytes(self) -> int:
        # Enough bytes for `output_chars` characters of any UTF-8 text; the rest is drained unread.
        return self.output_chars * 4


def cut(text: str, limit: int, *, more: bool = False) -> str:
    """`text` at most `limit` characters, marked when anything was left out."""
    if len(text) <= limit and not more:
        return text
    return f"{text[:limit]}\n[… output cut at {limit:,} characters]"
