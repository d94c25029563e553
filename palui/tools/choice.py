"""Which of the enabled tools a turn is offered when they don't all fit `max_tools`.

Tools are chosen one by one, not whole connectors, so a 54-tool server is offered by its
relevant tools instead of not at all. In order: the tools the conversation already used; a few
of the best of each connector the person names ("in github …"), so it is represented even when
its words score low; then the rest by BM25 score. Ties (a message that names nothing) go first
to each connector's first tools in its own listing order, connector by connector, so every
connector shows something: servers list their main tools first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from palui.domain import OfferReason

NAMED_SHARE = 8  # at most this many of a named connector's tools are reserved for it


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str  # full name
    connector_id: str
    position: int  # in its connector's listing


@dataclass(frozen=True, slots=True)
class Chosen:
    name: str
    why: OfferReason
    score: float


def tie_order(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The order of tools that score the same: each connector's first tools first."""
    return sorted(candidates, key=lambda c: (c.position, c.connector_id, c.name))


def choose(
    candidates: Sequence[Candidate],
    scores: Mapping[str, float],
    room: int,
    *,
    named: frozenset[str] = frozenset(),
    used: frozenset[str] = frozenset(),
) -> list[Chosen]:
    """At most `room` of `candidates` (given in `tie_order`), best first; `named`: connector
    ids the person named, `used`: full names of tools the conversation called."""
    if room <= 0:
        return []
    scored = sorted(
        (c for c in candidates if c.name in scores), key=lambda c: (-scores[c.name], c.name)
    )
    ordered = scored + [c for c in candidates if c.name not in scores]
    chosen: dict[str, Chosen] = {}

    def take(candidate: Candidate, why: OfferReason) -> None:
        if len(chosen) < room and candidate.name not in chosen:
            chosen[candidate.name] = Chosen(candidate.name, why, scores.get(candidate.name, 0.0))

    for candidate in ordered:
        if candidate.name in used:
            take(candidate, OfferReason.USED)
    if named:
        share = max(min(NAMED_SHARE, (room - len(chosen)) // len(named)), 1)
        taken = dict.fromkeys(named, 0)
        for candidate in ordered:
            if candidate.connector_id in taken and taken[candidate.connector_id] < share:
                taken[candidate.connector_id] += 1
                take(candidate, OfferReason.NAMED)
    for candidate in ordered:
        if len(chosen) >= room:
            break
        take(candidate, OfferReason.RANKED)
    return list(chosen.values())
