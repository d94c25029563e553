"""A fallback model standing in for a primary that refused the key (`palui.llm`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StandIn:
    """The primary model refused this key ("not allowed", "no such model"): `model`, a
    configured fallback, answered in its place."""

    primary: str
    model: str
    reason: str  # the primary's refusal, in words (no key in it)
