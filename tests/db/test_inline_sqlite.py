"""SQLite statements run on the event loop's thread (no thread hop per cursor call), and a
write lock another process holds is waited out with the loop free."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event, text

from palui.db import Database


def _trace_statements(db: Database, seen: Callable[[str], None]) -> None:
    """Calls `seen(sql)` on the thread that runs each statement (SQLite's trace callback)."""

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.driver_connection._conn.set_trace_callback(seen)

    event.listen(db.engine.sync_engine, "connect", on_connect)


async def test_statements_run_on_the_event_loops_thread(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'inline.db'}")
    threads: set[int] = set()
    _trace_statements(db, lambda _sql: threads.add(threading.get_ident()))
    try:
        async with db.session() as s, s.begin():
            await s.execute(text("CREATE TABLE t (n INTEGER)"))
            await s.execute(text("INSERT INTO t (n) VALUES (1)"))
        async with db.session() as s:
            assert await s.scalar(text("SELECT n FROM t")) == 1
    finally:
        await db.close()
    assert threads == {threading.get_ident()}


async def test_a_write_waits_out_another_process_lock_with_the_loop_free(tmp_path: Path) -> None:
    file = tmp_path / "locked.db"
    db = Database(f"sqlite+aiosqlite:///{file}")
    async with db.session() as s, s.begin():
        await s.execute(text("CREATE TABLE t (n INTEGER)"))
    begins = 0
    retried = asyncio.Event()
    loop = asyncio.get_running_loop()

    def seen(sql: str) -> None:
        nonlocal begins
        if sql == "BEGIN IMMEDIATE":
            begins += 1
            if begins == 3:  # refused twice already: it keeps trying
                loop.call_soon(retried.set)

    _trace_statements(db, seen)
    await db.engine.dispose()  # the next connection is traced
    other = sqlite3.connect(file, isolation_level=None)  # stands in for a `palui` command
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO t (n) VALUES (1)")

    async def write() -> None:
        async with db.session() as s, s.begin():
            await s.execute(text("INSERT INTO t (n) VALUES (2)"))

    try:
        writing = asyncio.create_task(write())
        retrying = asyncio.create_task(retried.wait())
        # The loop runs this test meanwhile: the wait does not hold it.
        await asyncio.wait({writing, retrying}, return_when=asyncio.FIRST_COMPLETED)
        assert retrying.done() and not writing.done()
        other.execute("COMMIT")
        await writing
        async with db.session() as s:
            assert (await s.execute(text("SELECT n FROM t ORDER BY n"))).scalars().all() == [1, 2]
    finally:
        other.close()
        await db.close()
