"""The tools a turn is offered: switched on, from running connectors, at most `max_tools`.

When the enabled tools fit, all are offered. Otherwise the built-ins, `palui__find_tools`, and
the most relevant of the rest, tool by tool (`palui.tools.choice`), scored against an index of
every connected tool that is rebuilt only when a connector's listing changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from palui.domain import ConnectorState, OfferReason, RemoteTool, ToolSpec
from palui.ports import Toolset
from palui.tools.choice import Candidate, Chosen, choose, tie_order
from palui.tools.find_tools import FIND_TOOLS, FindTools
from palui.tools.names import full_name, offerable
from palui.tools.offering import OfferedTool, ToolOffer
from palui.tools.ranking import Query, ToolIndex, connector_words

__all__ = ["BUILTIN_IDS", "Allow", "OfferedTool", "ToolOffer", "ToolRegistry", "Wanted"]

BUILTIN_IDS = frozenset({"palui"})


Allow = Callable[[str, RemoteTool], bool]  # (connector id, tool) -> may it be offered?


@dataclass(frozen=True, slots=True)
class Wanted:
    """What a turn's offer is chosen for: what was said, and the tools it used."""

    query: Query
    used: frozenset[str] = frozenset()


def _spec(connector_id: str, remote: RemoteTool) -> ToolSpec:
    schema = remote.input_schema or {"type": "object", "properties": {}}
    return ToolSpec(full_name(connector_id, remote.name), remote.description, dict(schema))


@dataclass(frozen=True, slots=True)
class _Version:
    """What a catalog version's choosing needs, built once: each tool as it is offered, its
    place in its connector's listing, the words that name each connector, the index."""

    listed: tuple[RemoteTool, ...]
    tools: dict[str, OfferedTool]
    ties: list[Candidate]  # every tool, in `tie_order`
    names: dict[str, frozenset[str]]
    index: ToolIndex

    @classmethod
    def of(cls, listed: Sequence[tuple[Toolset, RemoteTool]]) -> _Version:
        tools: dict[str, OfferedTool] = {}
        positions: dict[str, int] = {}
        per_connector: Counter[str] = Counter()
        for toolset, remote in listed:
            name = full_name(toolset.id, remote.name)
            if not offerable(name):
                continue
            tools[name] = OfferedTool(_spec(toolset.id, remote), toolset, remote)
            positions[name] = per_connector[toolset.id]
            per_connector[toolset.id] += 1
        index = ToolIndex([(name, t.toolset.id, t.remote) for name, t in tools.items()])
        names = {cid: connector_words(cid) for cid in per_connector}
        ties = tie_order(Candidate(n, t.toolset.id, positions[n]) for n, t in tools.items())
        return cls(tuple(r for _, r in listed), tools, ties, names, index)

    def same(self, listed: Sequence[tuple[Toolset, RemoteTool]]) -> bool:
        return len(listed) == len(self.listed) and all(
            remote is seen for (_, remote), seen in zip(listed, self.listed, strict=True)
        )


class ToolRegistry:
    """All toolsets; which of their tools a turn may see is the caller's `allow`."""

    def __init__(self, toolsets: Sequence[Toolset]) -> None:
        self._toolsets = list(toolsets)
        # The last catalog version seen. A connector relists with new objects, so "the same
        # definition objects" means "the same version"; holding them keeps their ids unique.
        self._version: _Version | None = None

    @property
    def toolsets(self) -> list[Toolset]:
        return list(self._toolsets)

    def get(self, connector_id: str) -> Toolset | None:
        return next((t for t in self._toolsets if t.id == connector_id), None)

    def _current(self) -> _Version:
        listed = [
            (toolset, remote)
            for toolset in self._toolsets
            if toolset.status().state == ConnectorState.CONNECTED
            for remote in toolset.tools()
        ]
        if self._version is None or not self._version.same(listed):
            self._version = _Version.of(listed)
        return self._version

    def index(self) -> ToolIndex:
        return self._current().index

    def offer(
        self,
        query: str | Wanted,
        max_tools: int,
        allow: Allow | None = None,
        *,
        keep: Sequence[str] | None = None,
    ) -> ToolOffer:
        """Built-ins always; then every allowed tool if they fit, else the most relevant to
        `query` and `palui__find_tools`. `keep`: a resumed turn's tools, offered as they were."""
        wanted = query if isinstance(query, Wanted) else Wanted(Query.of(query))
        version = self._current()
        candidates = version.tools
        if allow is not None:
            candidates = {
                name: tool
                for name, tool in candidates.items()
                if allow(tool.toolset.id, tool.remote)
            }
        builtin = {n: t for n, t in candidates.items() if t.toolset.id in BUILTIN_IDS}
        finder = self._finder(allow) if len(candidates) > max_tools else None
        if keep is not None:
            kept = {name: candidates[name] for name in keep if name in candidates}
            chosen = {name: Chosen(name, OfferReason.RESUMED, 0.0) for name in kept}
            return self._offer(kept, candidates, chosen, version, max_tools, finder, True)
        if finder is None:
            fit = OfferReason.ALL_FIT
            chosen = {n: Chosen(n, fit, 0.0) for n in candidates if n not in builtin}
            return ToolOffer(candidates, chosen=chosen, budget=max_tools)
        room = max(max_tools - len(builtin) - 1, 0)
        others = [c for c in version.ties if c.name in candidates and c.name not in builtin]
        named = frozenset(
            cid for cid, words in version.names.items() if words and wanted.query.names(words)
        )
        scores = version.index.scores(wanted.query)
        picked = choose(others, scores, room, named=named, used=wanted.used)
        offered = {**builtin, **{c.name: candidates[c.name] for c in picked}}
        chosen = {c.name: c for c in picked}
        return self._offer(offered, candidates, chosen, version, max_tools, finder, False)

    def _offer(
        self,
        offered: dict[str, OfferedTool],
        candidates: dict[str, OfferedTool],
        chosen: dict[str, Chosen],
        version: _Version,
        max_tools: int,
        finder: FindTools | None,
        recorded: bool,
    ) -> ToolOffer:
        search = None
        if finder is not None and len(offered) < len(candidates):
            search = OfferedTool(_spec(finder.id, FIND_TOOLS), finder, FIND_TOOLS)
        budget = max(max_tools, len(offered) + (search is not None))
        offer = ToolOffer(
            offered,
            candidates=candidates,
            chosen=chosen,
            index=version.index,
            budget=budget,
            finder=search,
            recorded=recorded,
        )
        if finder is not None:
            finder.serve(offer)
        return offer

    def _finder(self, allow: Allow | None) -> FindTools | None:
        """The turn's search, when the policy and the switches let it be offered."""
        finder = FindTools()
        if allow is not None and not allow(finder.id, FIND_TOOLS):
            return None
        return finder
