"""The database handle: engine, sessions, migrations, and a health check."""

from __future__ import annotations

import contextlib
import functools
import time
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import InvalidatePoolError, SQLAlchemyError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from palui.db.files import private_dir, sqlite_path, tighten_sqlite
from palui.db.inline_sqlite import BUSY_TIMEOUT_MS, inline_creator
from palui.db.revisions import newest_script, stored_revision
from palui.db.writes import SerialisedSession, WriteLock, sqlite_begin, write_connection
from palui.errors import DatabaseError

MIGRATE_LOCK = 0x70616C7569  # "palui": the PostgreSQL advisory lock one migration holds
# A pooled PostgreSQL connection idle this long is pinged before use (a restarted server or a
# dropped link left it dead); one returned sooner is used as it is: under load every checkout
# is one of those, and a ping per checkout was a round trip on the event loop each time.
PING_AFTER_IDLE_S = 1.0
_RETURNED_AT = "palui_returned_at"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    _set_pragmas(dbapi_connection, busy_timeout_ms=5000)


def _inline_sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # A statement waiting on another process's lock holds the whole event loop here: wait
    # briefly; palui.db.writes retries a locked BEGIN with the loop free.
    _set_pragmas(dbapi_connection, busy_timeout_ms=BUSY_TIMEOUT_MS)


def _set_pragmas(dbapi_connection: Any, busy_timeout_ms: int) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers (/status, doctor) run beside the writer; busy_timeout rides out short locks.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    # Only another process (a `palui` command beside the daemon) can still hold the write lock:
    # this process's writers queue on `WriteLock` instead (palui.db.writes).
    # With BEGIN retried (palui.db.writes) for ~10 s in all: a lock held longer than that is a
    # fault to report, not to wait out; waiting longer only stalls shutdown and every writer.
    cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    cursor.close()
    # Palui emits BEGIN itself (palui.db.writes): none of the driver's implicit, deferred one.
    dbapi_connection.isolation_level = None


class Database:
    """One engine per process; repositories borrow sessions from it."""

    def __init__(self, url: str) -> None:
        self.url = url
        parsed = make_url(url)
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        self.kind = "SQLite" if self.is_sqlite else "PostgreSQL"
        self.file = sqlite_path(url)  # created 0600 in a 0700 dir
        if self.file is not None:
            private_dir(self.file.parent)
        options: dict[str, Any] = {}
        if not self.is_sqlite:
            options = {"pool_size": 5, "max_overflow": 5}
        elif self.file is not None:
            # Each statement on the loop's thread instead of a thread hop per cursor call.
            options = {"async_creator": inline_creator(self.file)}
        self.engine: AsyncEngine = create_async_engine(url, **options)
        if self.is_sqlite:
            pragmas = _sqlite_pragmas if self.file is None else _inline_sqlite_pragmas
            event.listen(self.engine.sync_engine, "connect", pragmas)
            event.listen(self.engine.sync_engine, "begin", sqlite_begin)
        else:
            event.listen(self.engine.sync_engine, "checkin", _returned)
            event.listen(self.engine.sync_engine, "checkout", self._ping_if_idle)
        self.write_lock = WriteLock()
        session_class = SerialisedSession if self.is_sqlite else AsyncSession
        self.sessions = async_sessionmaker(
            self.engine, class_=session_class, expire_on_commit=False
        )

    def _ping_if_idle(self, dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        """SQLAlchemy's pre-ping, for a connection that sat idle: a dead one makes the pool
        drop every connection older than now and hand out a new one."""
        returned_at = record.info.get(_RETURNED_AT)
        if returned_at is None or time.monotonic() - returned_at < PING_AFTER_IDLE_S:
            return  # new, or back in the pool moments ago
        try:
            self.engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise InvalidatePoolError(f"a pooled connection is dead: {_reason(exc)}") from exc

    def session(self) -> AsyncSession:
        """A session; on SQLite its `begin()` is a serialised `BEGIN IMMEDIATE` write
        transaction (palui.db.writes), PostgreSQL's is unchanged."""
        session = self.sessions()
        if isinstance(session, SerialisedSession):
            session.write_lock = self.write_lock
        return session

    def writing(self) -> contextlib.AbstractAsyncContextManager[AsyncConnection]:
        """A write transaction on a connection, without a session (palui.db.writes)."""
        return write_connection(self.engine, self.write_lock if self.is_sqlite else None)

    async def close(self) -> None:
        await self.engine.dispose()

    async def migrate(self, revision: str = "head") -> None:
        """Bring the schema to `revision` (Alembic upgrade) on this engine's connection; a
        database already at the newest script is left alone without loading Alembic."""
        if self.file is not None and self.file.exists():
            tighten_sqlite(self.file)  # one created before Palui made it 0600
        try:
            if revision == "head" and await self._at_newest():
                return
            async with self.engine.begin() as connection:
                await connection.run_sync(functools.partial(self._upgrade, revision=revision))
        except (SQLAlchemyError, OSError) as exc:
            raise DatabaseError(f"migrating {self.kind} failed: {_reason(exc)}") from exc

    async def _at_newest(self) -> bool:
        newest = newest_script()  # None: the scripts can't be read plainly; Alembic decides
        if newest is None:
            return False
        async with self.engine.connect() as connection:
            return await connection.run_sync(stored_revision) == newest

    def _upgrade(self, connection: Any, revision: str) -> None:
        # Imported here, only when the schema may change: see palui.db.migrations.
        from palui.db import migrations

        if not self.is_sqlite:
            # Processes starting together on one empty database would each create the
            # tables (and one fail on a duplicate type): one migrates, the others wait and
            # then find the schema at head. Held until this transaction ends.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATE_LOCK})
        migrations.upgrade(connection, self.url, revision)

    async def revisions(self) -> tuple[str | None, str | None]:
        """(the database's revision, the newest revision Palui ships)."""
        from palui.db import migrations  # Alembic: only for the commands that ask

        try:
            async with self.engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
                return await connection.run_sync(migrations.current), migrations.head(self.url)
        except (SQLAlchemyError, OSError) as exc:
            raise DatabaseError(f"{self.kind} can't be reached: {_reason(exc)}") from exc


def _returned(_dbapi_connection: Any, record: Any) -> None:
    if record is not None:
        record.info[_RETURNED_AT] = time.monotonic()


def _reason(exc: BaseException) -> str:
    original = getattr(exc, "orig", None) or exc
    return str(original).splitlines()[0][:200] or type(original).__name__
