"""SQLite write transactions: one at a time per process, each taking the write lock at BEGIN.

SQLite has one writer. A deferred transaction that reads and then writes (most of ours: a
SELECT, then an UPDATE) fails at once with "database is locked" if another connection wrote
in between — busy_timeout does not help there — and writers that all wait on busy_timeout
poll the lock with sleeps, so under load (50 chats) some run past it. So on SQLite every
`session.begin()` is a write transaction that:

- first waits its turn on this process's `WriteLock` (an asyncio lock: waiting costs the event
  loop nothing, and it is FIFO), then
- opens with `BEGIN IMMEDIATE`, which takes the database's write lock up front, so no
  transaction ever has to upgrade from reading to writing. Only another process (a `palui`
  command beside the daemon) can still hold it: a BEGIN that finds it locked is retried with
  asyncio sleeps for up to `BEGIN_WAIT_S` (nothing has run yet, so that is always safe), the
  event loop free meanwhile, as statements run on its thread (palui.db.inline_sqlite).

We chose this over "BEGIN IMMEDIATE and retry the whole transaction on locked" because our
transactions are context managers whose bodies can't be re-run from here. Reads (a session
without `begin()`) open a deferred `BEGIN`: in WAL mode they never block the writer nor wait
for it. Write transactions are short and never await network I/O (model, MCP, Telegram):
the lock would hold every other writer back for as long. PostgreSQL does not use this module.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

WRITE = "palui_write"  # the connection execution option that makes `sqlite_begin` IMMEDIATE
BEGIN_WAIT_S = 10.0  # a write lock held longer by another process is a fault to report
BEGIN_PAUSE_S = 0.05  # the first pause between attempts; it doubles up to BEGIN_MAX_PAUSE_S
BEGIN_MAX_PAUSE_S = 1.0


def sqlite_begin(connection: Any) -> None:
    """The engine's "begin" event (the driver's own BEGIN is off): IMMEDIATE for writes."""
    write = connection.get_execution_options().get(WRITE)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def is_locked(exc: BaseException) -> bool:
    return isinstance(exc, OperationalError) and "locked" in str(exc.orig or exc).lower()


class WriteLock:
    """One write transaction at a time in this process (one lock per event loop, as tests may
    run several loops over one database)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._lock, self._owner = loop, asyncio.Lock(), None
        task = asyncio.current_task()
        if task is not None and task is self._owner:
            # It would wait for itself forever: a write transaction opened inside another.
            raise RuntimeError("a write transaction was opened inside another one")
        await self._lock.acquire()
        self._owner = task

    def release(self) -> None:
        self._owner = None
        self._lock.release()


class SerialisedSession(AsyncSession):
    """An AsyncSession whose `begin()` is a serialised `BEGIN IMMEDIATE` write transaction."""

    write_lock: WriteLock | None = None

    def begin(self) -> Any:
        if self.write_lock is None:
            return super().begin()
        return _WriteTransaction(self, self.write_lock)


class _WriteTransaction:
    def __init__(self, session: SerialisedSession, lock: WriteLock) -> None:
        self._session = session
        self._lock = lock
        self._transaction: Any = None

    async def __aenter__(self) -> Any:
        await self._lock.acquire()
        try:
            loop = asyncio.get_running_loop()
            give_up = loop.time() + BEGIN_WAIT_S
            pause = BEGIN_PAUSE_S
            while True:
                self._transaction = AsyncSession.begin(self._session)
                await self._transaction.__aenter__()
                try:
                    # Takes the connection now, so its BEGIN is the IMMEDIATE one.
                    await self._session.connection(execution_options={WRITE: True})
                    return self._transaction
                except OperationalError as exc:
                    # Ends the transaction block as an error would (a rollback), so a new one
                    # can begin on this session.
                    await self._transaction.__aexit__(type(exc), exc, exc.__traceback__)
                    if not is_locked(exc) or loop.time() + pause > give_up:
                        raise
                await asyncio.sleep(pause)
                pause = min(pause * 2, BEGIN_MAX_PAUSE_S)
        except BaseException:
            self._lock.release()
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._transaction.__aexit__(kind, exc, tb)
        finally:
            self._lock.release()


@contextlib.asynccontextmanager
async def write_connection(
    engine: AsyncEngine, lock: WriteLock | None
) -> AsyncIterator[AsyncConnection]:
    """A write transaction on a pooled connection, no session: for the hot statements that
    need no ORM (leases), ~100 µs less per transaction than a session's. On SQLite (`lock`
    given) it is serialised and opened with `BEGIN IMMEDIATE`, a locked BEGIN retried, as
    `SerialisedSession.begin()` is; on PostgreSQL it is `engine.begin()`."""
    if lock is None:
        async with engine.begin() as connection:
            yield connection
        return
    await lock.acquire()
    try:
        loop = asyncio.get_running_loop()
        give_up, pause = loop.time() + BEGIN_WAIT_S, BEGIN_PAUSE_S
        while True:
            async with engine.connect() as connection:
                writer = await connection.execution_options(**{WRITE: True})
                try:
                    transaction = await writer.begin()
                except OperationalError as exc:
                    if not is_locked(exc) or loop.time() + pause > give_up:
                        raise
                else:
                    try:
                        yield writer
                    except BaseException:
                        await transaction.rollback()
                        raise
                    await transaction.commit()
                    return
            await asyncio.sleep(pause)
            pause = min(pause * 2, BEGIN_MAX_PAUSE_S)
    finally:
        lock.release()
