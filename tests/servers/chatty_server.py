"""A tiny MCP server that talks on stderr, as many do: at start it prints a line carrying its
API key (from CHATTY_API_KEY) and a query string with an access token, then serves one tool.

Run over stdio: python -m tests.servers.chatty_server (or by file path). Imports only the SDK.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer


def build_server() -> MCPServer:
    server = MCPServer("chatty")

    @server.tool()
    def ping() -> str:
        """Answer pong."""
        print("ping called", file=sys.stderr, flush=True)
        return "pong"

    return server


def main() -> None:
    key = os.environ.get("CHATTY_API_KEY", "")
    print(f"chatty: starting with key {key}", file=sys.stderr, flush=True)
    print("chatty: GET https://api.example.org/v1?access_token=tok3nValue9", file=sys.stderr)
    sys.stderr.flush()
    anyio.run(build_server().run_stdio_async)


if __name__ == "__main__":
    main()
