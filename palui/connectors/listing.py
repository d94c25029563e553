"""Reading an open MCP client's tool list: every page, one tool at a time, and whether changes
will be announced.

The SDK reads a `tools/list` page whole: one tool it can't read (a hint that is not true or
false, a malformed entry) fails the page, and every tool of that server with it; and it reads
`"yes"` or `"1"` as true, so a read-only hint nobody can read would be believed. So the page is
asked for as it was sent, and each tool is read by itself: a hint that is not a JSON true or
false is kept as sent (`palui.policy.annotations` counts it unreadable: the tool is unsure, so
destructive, with that reason), and a tool that can't be read at all is left out, alone. The
tools read are handed to the SDK's session as a listing it had read itself (the per-tool state
it keeps for calls: output schemas, mirrored headers).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from mcp import Client
from mcp import types as mcp_types
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from palui.connectors.content import remote_tool
from palui.domain import RemoteTool
from palui.logs import get_logger

log = get_logger(__name__)

PAGE_LIMIT = 100  # a server whose cursor never ends can't hang the listing
NOT_AN_OBJECT = "annotations"  # the key an annotations value that is no object is kept under


async def list_all_tools(client: Client) -> tuple[RemoteTool, ...]:
    """Every page of `tools/list`; a name listed twice keeps its first definition."""
    tools: dict[str, RemoteTool] = {}
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(PAGE_LIMIT):
        raw = await _raw_page(client, cursor)
        read = [found for item in _items(raw) if (found := read_tool(item)) is not None]
        cursor = raw.get("nextCursor") if isinstance(raw.get("nextCursor"), str) else None
        _absorb(client, [sdk for sdk, _ in read], cursor, first=not seen)
        for _, tool in read:
            tools.setdefault(tool.name, tool)
        if cursor is None or cursor in seen:
            break
        seen.add(cursor)
    return tuple(tools.values())


def read_tool(item: Any) -> tuple[mcp_types.Tool, RemoteTool] | None:
    """One tool as the server sent it: the SDK's reading of it with its unreadable hints left
    out, and Palui's with them kept as sent. None: not a tool anyone can call."""
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        log.warning("tool_unreadable", tool=_short(item))
        return None
    raw_marks = item.get("annotations")
    clean = dict(item)
    kept: dict[str, Any] | None = None
    if isinstance(raw_marks, dict):
        clean["annotations"] = {
            key: value
            for key, value in raw_marks.items()
            if not key.endswith("Hint") or isinstance(value, bool) or value is None
        }
        kept = {key: value for key, value in raw_marks.items() if value is not None}
    elif raw_marks is not None:
        clean.pop("annotations")
        kept = {NOT_AN_OBJECT: raw_marks}
    try:
        sdk = mcp_types.Tool.model_validate(clean, by_name=False)
    except ValidationError as exc:
        log.warning("tool_unreadable", tool=item["name"][:128], error=_short(exc.errors()))
        return None
    tool = remote_tool(sdk)
    if kept is not None:
        tool = replace(tool, annotations=kept)
    return sdk, tool


def _items(raw: Any) -> list[Any]:
    tools = raw.get("tools") if isinstance(raw, dict) else None
    return tools if isinstance(tools, list) else []


async def _raw_page(client: Client, cursor: str | None) -> dict[str, Any]:
    """One `tools/list` page as the server sent it, asked for as the SDK's session asks."""
    session: Any = client.session
    data: dict[str, Any] = {"method": "tools/list"}
    if cursor is not None:
        data["params"] = {"cursor": cursor}
    opts: dict[str, Any] = {}
    session._stamp(data, opts)  # the protocol version's headers and fields, as for any request
    timeout = session._session_read_timeout_seconds
    if timeout is not None:
        opts["timeout"] = timeout
    raw = await session._dispatcher.send_raw_request("tools/list", data.get("params"), opts)
    return raw if isinstance(raw, dict) else {}


def _absorb(client: Client, tools: list[mcp_types.Tool], cursor: str | None, first: bool) -> None:
    """The SDK's per-tool state (for calls) from the tools read."""
    session: Any = client.session
    result = mcp_types.ListToolsResult(tools=tools, next_cursor=cursor)
    session._absorb_tool_listing(result, complete=first and cursor is None)


def _short(value: Any) -> str:
    return json.dumps(value, default=repr, ensure_ascii=False)[:300]


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
