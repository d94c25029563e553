"""A write transaction cancelled while its `BEGIN IMMEDIATE` waits for the SQLite write lock
(e.g. a turn cancelled by /stop or shutdown while another process holds the lock) leaves no
transaction open: the driver's thread finishes the BEGIN whatever the caller does, and a
transaction nobody rolls back would hold the database's write lock (found as a 10 s stall at
shutdown)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from sqlalchemy import event, text

from palui.db import Database


async def test_a_write_cancelled_during_its_begin_leaves_the_write_lock_free(
    tmp_path: Path,
) -> None:
    path = tmp_path / "palui.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    async with db.session() as s, s.begin():
        await s.execute(text("CREATE TABLE t (x INTEGER)"))
    begun = asyncio.Event()

    def seen(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        if statement.startswith("BEGIN IMMEDIATE"):
            begun.set()

    event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    other = sqlite3.connect(path, isolation_level=None)  # another process holding the lock
    other.execute("BEGIN IMMEDIATE")

    async def write() -> None:
        async with db.session() as s, s.begin():
            await s.execute(text("INSERT INTO t VALUES (1)"))

    task = asyncio.create_task(write())
    await begun.wait()
    for _ in range(3):
        await asyncio.sleep(0)  # the BEGIN is now queued in the driver's thread
    task.cancel()
    other.execute("ROLLBACK")  # the lock frees: the driver's BEGIN IMMEDIATE now gets it
    results = await asyncio.gather(task, return_exceptions=True)
    assert isinstance(results[0], asyncio.CancelledError | Exception)

    check = sqlite3.connect(path, isolation_level=None, timeout=5)
    try:
        check.execute("BEGIN IMMEDIATE")  # "database is locked" if a BEGIN was left open
        check.execute("ROLLBACK")
    finally:
        check.close()
        other.close()
    async with db.session() as s, s.begin():  # and this process still writes
        await s.execute(text("INSERT INTO t VALUES (2)"))
    async with db.session() as s:
        assert (await s.execute(text("SELECT x FROM t"))).scalars().all() == [2]
    await db.close()
