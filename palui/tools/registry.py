"""The tools a turn is offered: switched on, from running connectors, at most `max_tools`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from palui.domain import ConnectorState, RemoteTool, ToolSpec
from palui.ports import Toolset
from palui.tools.names import full_name, offerable
from palui.tools.ranking import pick_within, rank

BUILTIN_IDS = frozenset({"palui"})


Allow = Callable[[str, RemoteTool], bool]  # (connector id, tool) -> may it be offered?


@dataclass(frozen=True, slots=True)
class OfferedTool:
    spec: ToolSpec
    toolset: Toolset
    remote: RemoteTool


@dataclass(frozen=True, slots=True)
class ToolOffer:
    tools: Mapping[str, OfferedTool]

    @property
    def specs(self) -> list[ToolSpec]:
        return [tool.spec for tool in self.tools.values()]


def _spec(connector_id: str, remote: RemoteTool) -> ToolSpec:
    schema = remote.input_schema or {"type": "object", "properties": {}}
    return ToolSpec(full_name(connector_id, remote.name), remote.description, dict(schema))


class ToolRegistry:
    """All toolsets; which of their tools a turn may see is the caller's `allow`."""

    def __init__(self, toolsets: Sequence[Toolset]) -> None:
        self._toolsets = list(toolsets)

    @property
    def toolsets(self) -> list[Toolset]:
        return list(self._toolsets)

    def get(self, connector_id: str) -> Toolset | None:
        return next((t for t in self._toolsets if t.id == connector_id), None)

    def offer(self, query: str, max_tools: int, allow: Allow | None = None) -> ToolOffer:
        """Built-ins always; then whole connectors, most relevant to `query` first."""
        groups: dict[str, list[OfferedTool]] = {}
        for toolset in self._toolsets:
            if toolset.status().state != ConnectorState.CONNECTED:
                continue
            tools = [
                OfferedTool(_spec(toolset.id, remote), toolset, remote)
                for remote in toolset.tools()
                if offerable(full_name(toolset.id, remote.name))
                and (allow is None or allow(toolset.id, remote))
            ]
            if tools:
                groups[toolset.id] = tools
        builtin = [t for key in BUILTIN_IDS & groups.keys() for t in groups[key]]
        others = {key: tools for key, tools in groups.items() if key not in BUILTIN_IDS}
        room = max(max_tools - len(builtin), 0)
        if sum(len(tools) for tools in others.values()) > room:
            documents = {
                key: " ".join(f"{t.remote.name} {t.remote.description}" for t in tools)
                for key, tools in others.items()
            }
            sizes = {key: len(tools) for key, tools in others.items()}
            keep = pick_within(rank(query, documents), sizes, room)
            others = {key: others[key] for key in keep}
        chosen = builtin + [t for tools in others.values() for t in tools]
        return ToolOffer({tool.spec.name: tool for tool in chosen})
