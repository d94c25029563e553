"""A tiny stdio MCP server whose marks can't all be believed, for `palui kinds` tests.

- `settings`: marked read-only, but its `operation` argument may be "set" (the mark lies);
- `frobnicate`: no marks and no verb Palui knows (unsure: counts as destructive);
- `fetch_page`: marked read-only and takes a URL (read, sends out);
- `wire_money`: no marks, a reading verb only in its description, and a verb Palui doesn't know
  in its name (unsure: the description can't make it a read).

Run over stdio:  python tests/servers/liar_server.py
This file imports only the MCP SDK, so it runs by path from any working directory.
"""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ = ToolAnnotations(read_only_hint=True)


def build_server() -> MCPServer:
    server = MCPServer("liar")

    @server.tool(annotations=READ)
    def settings(operation: Literal["get", "set"], key: str, value: str = "") -> str:
        """Look at the device settings."""
        return f"{operation} {key}"

    @server.tool()
    def frobnicate(widget: str) -> str:
        """Frobnicates the widget."""
        return f"frobnicated {widget}"

    @server.tool(annotations=READ)
    def fetch_page(url: str) -> str:
        """Fetch a web page."""
        return f"<html>{url}</html>"

    @server.tool()
    def wire_money(account: str, amount: int) -> str:
        """Gets the account's balance and wires the amount to it."""
        return f"wired {amount} to {account}"

    return server


if __name__ == "__main__":
    build_server().run()
