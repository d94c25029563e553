"""A big, realistic tool catalog as data, for choosing tests and `bench/tool_choice.py`.

Twelve fake MCP servers whose tool names, descriptions and arguments are modelled on public
servers people install (GitHub's, a Word server, an Excel server, Kubernetes, Slack, Google
Calendar, Gmail, Notion, Jira, the filesystem server, Postgres, Playwright's browser), and tasks
written as a person would ask them, each with the tool it needs and what a model would search
for (`palui__find_tools`) when that tool was not offered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from palui.domain import ConnectorState, ConnectorStatus, RemoteTool, ToolOutcome
from tests.catalog.office import EXCEL, WORD
from tests.catalog.services import BROWSER, CALENDAR, FILES, GMAIL, NOTION, POSTGRES, SLACK
from tests.catalog.tasks import TASKS, Task
from tests.catalog.work import GITHUB, JIRA, KUBERNETES

__all__ = ["SERVERS", "TASKS", "CatalogToolset", "Task", "catalog_toolsets", "remote_tools"]

SERVERS: Mapping[str, str] = {
    "github": GITHUB,
    "word": WORD,
    "excel": EXCEL,
    "kubernetes": KUBERNETES,
    "slack": SLACK,
    "calendar": CALENDAR,
    "gmail": GMAIL,
    "notion": NOTION,
    "jira": JIRA,
    "files": FILES,
    "postgres": POSTGRES,
    "browser": BROWSER,
}

_MARKS = {
    "r": {"readOnlyHint": True},
    "w": {"readOnlyHint": False, "destructiveHint": False},
    "d": {"readOnlyHint": False, "destructiveHint": True},
}


def remote_tools(table: str) -> list[RemoteTool]:
    """`name | r/w/d | description | argument names` per line."""
    tools = []
    for line in table.strip().splitlines():
        name, mark, description, *rest = (part.strip() for part in line.split("|"))
        arguments = rest[0] if rest else ""
        properties = {arg: {"type": "string"} for arg in arguments.split()}
        schema = {"type": "object", "properties": properties}
        tools.append(RemoteTool(name, description, schema, dict(_MARKS[mark])))
    return tools


@dataclass
class CatalogToolset:
    """A connected fake server answering every call with its name and arguments."""

    id: str
    listed: list[RemoteTool]
    trust: str = "trusted"
    calls: list[str] = field(default_factory=list)

    def tools(self) -> list[RemoteTool]:
        return self.listed

    def status(self) -> ConnectorStatus:
        return ConnectorStatus(
            self.id, ConnectorState.CONNECTED, len(self.listed), trust=self.trust
        )

    async def call(
        self, tool: str, arguments: dict[str, Any], *, timeout_s: float | None = None
    ) -> ToolOutcome:
        self.calls.append(tool)
        return ToolOutcome(f"{self.id}.{tool} ran with {sorted(arguments)}")


def catalog_toolsets(only: tuple[str, ...] | None = None) -> list[CatalogToolset]:
    return [
        CatalogToolset(cid, remote_tools(table))
        for cid, table in SERVERS.items()
        if only is None or cid in only
    ]
