"""One turn's offer: the tools its model is shown now and, when some enabled tools were left
out of the budget, the rest it may find (`palui__find_tools`) or call by name.

The offer can grow within a turn, never past `max_tools`: a tool found or called is offered
from the next model step and the least relevant ranked tool gives way. Tools the turn used,
the built-ins and the search itself never give way. What is offered and why is kept as events
for the turn's record (`drain`), which the web console's turn page shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from palui.domain import OfferEvent, OfferReason, RemoteTool, ToolSpec
from palui.ports import Toolset
from palui.tools.choice import Chosen
from palui.tools.ranking import Query, ToolIndex

EVERY_TOOL = "*"  # the record of a turn offered every enabled tool
FOUND_MAX = 6  # tools one search makes callable: enough for a task, few enough to keep room
# Which tools give way first when a found one needs room: the least relevant ranked one.
_GIVES_WAY = {
    OfferReason.RANKED: 0,
    OfferReason.ALL_FIT: 0,
    OfferReason.NAMED: 1,
    OfferReason.RESUMED: 1,
    OfferReason.CALLED: 2,
    OfferReason.FOUND: 2,
}


@dataclass(frozen=True, slots=True)
class OfferedTool:
    spec: ToolSpec
    toolset: Toolset
    remote: RemoteTool


def _order(tools: Iterable[OfferedTool]) -> dict[str, OfferedTool]:
    """Stable: by connector, then name, so a provider's prompt cache keeps hitting."""
    return {t.spec.name: t for t in sorted(tools, key=lambda t: (t.toolset.id, t.remote.name))}


class ToolOffer:
    """The tools offered now (`tools`), out of `candidates`: every tool the turn may be offered
    (switched on, its connector running, allowed for the turn's kind and taint)."""

    def __init__(
        self,
        tools: Mapping[str, OfferedTool],
        *,
        candidates: Mapping[str, OfferedTool] | None = None,
        chosen: Mapping[str, Chosen] | None = None,
        index: ToolIndex | None = None,
        budget: int | None = None,
        finder: OfferedTool | None = None,
        recorded: bool = False,
    ) -> None:
        self._candidates = dict(candidates if candidates is not None else tools)
        self._index = index
        self._chosen = dict(chosen or {})
        self._budget = budget if budget is not None else len(tools)
        self._finder = finder
        self._used: set[str] = set()
        offered = list(tools.values()) + ([finder] if finder is not None else [])
        self._tools = _order(offered)
        enabled = self.enabled
        self._events: list[OfferEvent] = []
        if recorded or not enabled:
            return  # a resumed turn's were recorded before its pause; no tools, nothing to say
        if finder is None and len(self._tools) == enabled:
            # Nothing was chosen: one row says so (a row per tool would cost every turn).
            self._events = [OfferEvent(EVERY_TOOL, OfferReason.ALL_FIT, "", enabled)]
        else:
            self._events = [self._event(name, enabled) for name in self._tools]

    def _event(self, name: str, enabled: int) -> OfferEvent:
        chosen = self._chosen.get(name)
        why = chosen.why if chosen is not None else OfferReason.BUILTIN
        detail = f"score {chosen.score:.2f}" if chosen and chosen.score else ""
        return OfferEvent(name, why, detail, enabled)

    @property
    def tools(self) -> Mapping[str, OfferedTool]:
        return self._tools

    @property
    def specs(self) -> list[ToolSpec]:
        return [tool.spec for tool in self._tools.values()]

    @property
    def enabled(self) -> int:
        """How many tools the turn may be offered (the search itself not counted)."""
        return len(self._candidates)

    @property
    def left_out(self) -> int:
        return sum(1 for name in self._candidates if name not in self._tools)

    @property
    def searchable(self) -> bool:
        return self._finder is not None and self._finder.spec.name in self._tools

    def why(self, name: str) -> OfferReason | None:
        if name not in self._tools:
            return None
        chosen = self._chosen.get(name)
        return chosen.why if chosen is not None else OfferReason.BUILTIN

    def mark_used(self, name: str) -> None:
        """A tool the turn called stays offered for the rest of it."""
        self._used.add(name)

    def find(self, query: str) -> list[OfferedTool]:
        """The enabled tools that best match `query` (names, descriptions, connectors), each
        made callable from the next step as room allows; the ones that are callable now."""
        if self._index is None:
            return []
        scores = self._index.scores(Query.of(query))
        found = sorted(
            (name for name in self._candidates if scores.get(name, 0.0) > 0),
            key=lambda name: (-scores[name], name),
        )[:FOUND_MAX]
        keep = set(found)
        callable_now = []
        for name in found:
            if self._admit(name, OfferReason.FOUND, f"search: {query[:120]}", keep, scores[name]):
                callable_now.append(self._candidates[name])
        return callable_now

    def admit(self, name: str) -> bool:
        """A tool the model called without it being offered: offered from the next step if it
        may be offered at all (the policy still decides its call as any other's)."""
        return self._admit(name, OfferReason.CALLED, "the model called it by name", {name}, 0.0)

    def _admit(
        self, name: str, why: OfferReason, detail: str, keep: set[str], score: float
    ) -> bool:
        if name in self._tools:
            return True
        tool = self._candidates.get(name)
        if tool is None:
            return False
        if len(self._tools) >= self._budget:
            gives_way = self._gives_way(keep)
            if gives_way is None:
                return False
            del self._tools[gives_way]
        self._chosen[name] = Chosen(name, why, score)
        self._tools = _order([*self._tools.values(), tool])
        self._events.append(OfferEvent(name, why, detail, self.enabled))
        return True

    def _gives_way(self, keep: set[str]) -> str | None:
        ranked = [
            (_GIVES_WAY[chosen.why], chosen.score, name)
            for name, chosen in self._chosen.items()
            if name in self._tools
            and chosen.why in _GIVES_WAY
            and name not in self._used
            and name not in keep
        ]
        return min(ranked)[2] if ranked else None

    def drain(self) -> list[OfferEvent]:
        """What was offered since the last drain, for the turn's record."""
        events, self._events = self._events, []
        return events
