"""`palui__find_tools(query)`: the model asks for tools the turn's offer left out.

A read tool of connector `palui`, classed by its marks like any tool; offered only when some
enabled tools did not fit `max_tools`. It searches the turn's whole enabled catalog and makes
what it found callable from the next model step (`ToolOffer.find`).
"""

from __future__ import annotations

from typing import Any

from palui.domain import ConnectorState, ConnectorStatus, RemoteTool, ToolOutcome
from palui.tools.offering import ToolOffer

CONNECTOR_ID = "palui"
NAME = "find_tools"
DESCRIPTION_CHARS = 160

FIND_TOOLS = RemoteTool(
    NAME,
    "Search all the tools the user has enabled (names, descriptions, which app or server) when "
    "none of the tools you were given fits the task. The tools found can be called from your "
    "next step.",
    {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What the tool should do, in a few words "
                "(e.g. 'add a row to an excel sheet').",
            }
        },
        "required": ["query"],
    },
    {"readOnlyHint": True, "openWorldHint": False},
)


def _line(name: str, description: str) -> str:
    short = " ".join(description.split())
    if len(short) > DESCRIPTION_CHARS:
        short = short[: DESCRIPTION_CHARS - 1] + "…"
    return f"- {name}: {short}" if short else f"- {name}"


class FindTools:
    """The search of one turn's offer (implements `palui.ports.Toolset`)."""

    def __init__(self) -> None:
        self._offer: ToolOffer | None = None

    def serve(self, offer: ToolOffer) -> None:
        """The offer this search grows (built after it, as the offer holds the search)."""
        self._offer = offer

    @property
    def id(self) -> str:
        return CONNECTOR_ID

    @property
    def trust(self) -> str:
        return "trusted"  # it shows tool definitions the turn's prompt shows already

    def tools(self) -> list[RemoteTool]:
        return [FIND_TOOLS]

    def status(self) -> ConnectorStatus:
        return ConnectorStatus(CONNECTOR_ID, ConnectorState.CONNECTED, 1, trust=self.trust)

    async def call(
        self, tool: str, arguments: dict[str, Any], *, timeout_s: float | None = None
    ) -> ToolOutcome:
        query = arguments.get("query")
        if tool != NAME or not isinstance(query, str) or not query.strip():
            return ToolOutcome("Error: give a query: what the tool should do.", is_error=True)
        if self._offer is None:
            return ToolOutcome("Error: no tools to search in this turn.", is_error=True)
        found = self._offer.find(query)
        if not found:
            return ToolOutcome(
                f"No enabled tool matches {query!r}. Try other words, or answer without a tool."
            )
        lines = [_line(t.spec.name, t.remote.description) for t in found]
        return ToolOutcome("These tools can be called from your next step:\n" + "\n".join(lines))
