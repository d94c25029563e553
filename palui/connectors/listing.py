"""Reading an open MCP client's tool list: every page, and whether changes will be announced."""

from __future__ import annotations

from mcp import Client
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from palui.connectors.content import remote_tool
from palui.domain import RemoteTool

PAGE_LIMIT = 100  # a server whose cursor never ends can't hang the listing


async def list_all_tools(client: Client) -> tuple[RemoteTool, ...]:
    """Every page of `tools/list`; a name listed twice keeps its first definition."""
    tools: dict[str, RemoteTool] = {}
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(PAGE_LIMIT):
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            tools.setdefault(tool.name, remote_tool(tool))
        cursor = page.next_cursor
        if cursor is None or cursor in seen:
            break
        seen.add(cursor)
    return tuple(tools.values())


def can_listen_for_tool_changes(client: Client) -> bool:
    """On the 2026 protocol, changes come only on a `subscriptions/listen` stream the client
    opens; older servers send `notifications/tools/list_changed` unasked (and some send it
    without declaring the capability, so that path needs no check)."""
    capability = client.server_capabilities.tools
    return (
        client.protocol_version in MODERN_PROTOCOL_VERSIONS
        and capability is not None
        and bool(capability.list_changed)
    )
