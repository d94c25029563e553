"""SQLite statements run on the event loop's own thread, not through aiosqlite's worker thread.

aiosqlite hands every cursor call (execute, fetch, commit: ~130 in one turn) to a thread and
back: a queue put, a GIL hand-over, a wake-up of the loop through its self-pipe. For a local
SQLite file those hops cost more CPU than the statements, and under load they are what the
event loop spends most of its time on. So Palui's connections run each call inline; SQLAlchemy's
aiosqlite dialect is unchanged above them.

Blocking the loop is safe here because nothing a statement does waits long:
- WAL readers never wait for the writer;
- this process's writers already queue on an asyncio lock (palui.db.writes), so a `BEGIN
  IMMEDIATE` waits only when another process (a `palui` command) holds the write lock, and
  `busy_timeout` is short on these connections: `writes` retries the BEGIN with asyncio sleeps
  instead, the loop staying free;
- with `synchronous=NORMAL` a WAL commit does not fsync (a checkpoint does, every ~1000 pages).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiosqlite

from palui.db.files import create_private_file

BUSY_TIMEOUT_MS = 50  # the longest a statement may hold the loop waiting for another process


class _Inline:
    """Stands in for aiosqlite's queue to its worker thread: each call runs at once.
    (SQLAlchemy's dialect puts calls on this queue directly, e.g. to set isolation_level.)"""

    def put_nowait(self, item: tuple[asyncio.Future[Any] | None, Callable[[], Any]]) -> None:
        future, function = item
        try:
            result = function()
        except BaseException as exc:
            if future is None:
                raise
            future.set_exception(exc)
            return
        if future is not None:
            future.set_result(result)


class InlineConnection(aiosqlite.Connection):
    """An aiosqlite connection without its thread: every call runs on the caller's thread."""

    def __init__(self, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._tx = _Inline()  # type: ignore[assignment]

    def __await__(self) -> Any:
        return self._connect().__await__()  # no thread to start

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or not self._connection:
            raise ValueError("Connection closed")
        return fn(*args, **kwargs)


def inline_creator(file: Path) -> Callable[[], Any]:
    """`create_async_engine(async_creator=...)` for the SQLite file."""

    def connector() -> sqlite3.Connection:
        create_private_file(file)  # right before SQLite would create it (0644 under umask)
        # Not tied to the thread that opened it: a pool's connection may be used on another
        # event loop's thread (SQLite itself is built serialised).
        return sqlite3.connect(file, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)

    async def connect() -> InlineConnection:
        return await InlineConnection(connector)

    return connect
