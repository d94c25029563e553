"""MCP wire shapes -> Palui's plain data: a listed tool -> RemoteTool, a call result -> text."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as mcp_types

from palui.domain import RemoteTool, ToolOutcome

# Provenance over MCP `_meta` (DESIGN §1.1; the bundled recall's side: palui.recall_server.render):
# a tool whose listing has KEEPS_ORIGIN_META stores the ORIGIN_META a request carries (a memory
# written in a tainted turn); a result lists the untrusted origins of what it shows under
# ORIGINS_META.
KEEPS_ORIGIN_META = "palui/keeps-origin"
ORIGIN_META = "palui/origin"
ORIGINS_META = "palui/untrusted-origins"
MAX_ORIGINS = 20


def remote_tool(tool: mcp_types.Tool) -> RemoteTool:
    annotations = None
    if tool.annotations is not None:
        annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True)
    title = tool.title or (tool.annotations.title if tool.annotations else None)
    return RemoteTool(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        annotations=annotations,
        title=title,
        keeps_origin=bool((tool.meta or {}).get(KEEPS_ORIGIN_META)),
    )


def outcome_text(result: mcp_types.CallToolResult) -> ToolOutcome:
    """Text blocks joined; structured content as JSON when there is no text; binaries as a note."""
    parts = [_block_text(block) for block in result.content]
    has_text = any(isinstance(block, mcp_types.TextContent) for block in result.content)
    if result.structured_content is not None and not has_text:
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    text = "\n".join(part for part in parts if part) or "(no content)"
    return ToolOutcome(text=text, is_error=bool(result.is_error), origins=_origins(result.meta))


def _origins(meta: dict[str, Any] | None) -> tuple[str, ...]:
    found = (meta or {}).get(ORIGINS_META)
    if not isinstance(found, list):
        return ()
    return tuple(str(origin)[:200] for origin in found if origin)[:MAX_ORIGINS]


def _block_text(block: Any) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        return f"[{block.mime_type}, {human_size(_base64_size(block.data))}]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource link: {block.name} <{block.uri}>]"
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        kind = resource.mime_type or "binary"
        return f"[resource {resource.uri}: {kind}, {human_size(_base64_size(resource.blob))}]"
    return f"[{getattr(block, 'type', 'unknown')} content]"


def _base64_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} kB"
    return f"{size / (1024 * 1024):.1f} MB"
