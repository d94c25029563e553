"""A lease as its holder took it: which chat, who, and the generation of that take.

Every take of a lease gets a new generation (a renewal keeps it), so a write made under a fence
can be checked against the lease row: a holder that stalled while another process took the
lease over finds its generation stale, and its late writes are refused (`LeaseLost`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fence:
    chat_id: int
    holder: str
    generation: int
