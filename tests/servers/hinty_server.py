"""A tiny stdio MCP server whose hints can't all be read, for the one-tool-at-a-time listing.

- `peek_status`: readOnlyHint "yes" (a string: nobody can read it as true);
- `count_widgets`: readOnlyHint [1] (the wrong type: the SDK would refuse the whole page);
- `list_widgets`: readOnlyHint true (read, unaffected by its neighbours).

Run over stdio:  python tests/servers/hinty_server.py
This file imports only the MCP SDK, so it runs by path from any working directory.
"""

from __future__ import annotations

import warnings

import mcp.server.runner as runner
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

# A careless server: its tool list goes out as it is, without the SDK's check of its own result.
_checked = runner._methods.serialize_server_result


def _unchecked(method, version, dumped):
    return dumped if method == "tools/list" else _checked(method, version, dumped)


runner._methods.serialize_server_result = _unchecked
warnings.filterwarnings("ignore", category=UserWarning)  # pydantic: "expected bool"


def build_server() -> MCPServer:
    server = MCPServer("hinty")

    # model_construct: the server sends these as they are, unchecked.
    @server.tool(annotations=ToolAnnotations.model_construct(read_only_hint="yes"))
    def peek_status(widget: str) -> str:
        """Show the status of a widget."""
        return f"{widget}: fine"

    @server.tool(annotations=ToolAnnotations.model_construct(read_only_hint=[1]))
    def count_widgets() -> str:
        """Count the widgets."""
        return "3"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def list_widgets() -> str:
        """List the widgets."""
        return "a, b"

    return server


if __name__ == "__main__":
    build_server().run()
