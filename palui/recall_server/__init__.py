"""recall: Palui's bundled long-term memory, an MCP server over SQLite FTS5.

It runs as its own process (`palui recall-server` or `python -m palui.recall_server --db PATH`)
and imports nothing else from Palui, so Palui reaches it only through MCP, like any recall server.

    schema  the SQLite file: tables, FTS5 index, triggers, user_version
    query   a person's words -> a safe FTS5 MATCH expression
    store   MemoryStore: add / search / ask / profile / list / forget (blocking)
    render  memories as text and as structured content
    server  the MCP tools over a MemoryStore
    run     the command line: --db PATH, --http HOST:PORT
"""

from palui.recall_server.run import main
from palui.recall_server.server import build_server
from palui.recall_server.store import Memory, MemoryKind, MemoryStore, NewMemory

__all__ = ["Memory", "MemoryKind", "MemoryStore", "NewMemory", "build_server", "main"]
