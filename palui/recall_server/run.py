"""`palui recall-server` / `python -m palui.recall_server`: serve recall over stdio or HTTP."""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

from palui.recall_server.schema import SchemaTooNew
from palui.recall_server.server import build_server
from palui.recall_server.store import MemoryStore


def default_db_path() -> Path:
    data_dir = os.environ.get("PALUI_DATA_DIR")
    return Path(data_dir) / "recall.db" if data_dir else Path("data") / "recall.db"


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (e.g. 127.0.0.1:8765), got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="palui recall-server",
        description="Palui's long-term memory as an MCP server (SQLite FTS5).",
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="the SQLite file (default: $PALUI_DATA_DIR/recall.db, else data/recall.db)",
    )
    parser.add_argument(
        "--http",
        type=_host_port,
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp (default: stdio)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # stdout carries the stdio protocol: logs go to stderr only.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="recall: %(message)s")
    path: Path = args.db if args.db is not None else default_db_path()
    try:
        store = MemoryStore(path)
    except (OSError, sqlite3.Error, SchemaTooNew) as exc:
        print(f"recall: cannot open {path}: {exc}", file=sys.stderr)
        return 1
    try:
        server = build_server(store)
        if args.http is None:
            anyio.run(server.run_stdio_async)
        else:
            host, port = args.http
            anyio.run(serve_http, server, host, port)
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
    return 0


async def serve_http(server: MCPServer, host: str, port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(host=host)
    # Clients keep an SSE stream open: without a bound, a graceful stop waits for them forever.
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3
    )
    await uvicorn.Server(config).serve()
