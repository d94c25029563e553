"""PostgreSQL's pooled connections: one that sat idle is pinged before use, so a connection the
server dropped meanwhile is replaced, not handed to a turn; one returned moments ago (every
checkout under load) is used without that round trip."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text

import palui.db.engine as engine_module
from palui.db import Database


@pytest.fixture
async def postgres(database_url: str) -> AsyncIterator[Database]:
    if database_url.startswith("sqlite"):
        pytest.skip("SQLite opens no pooled network connections")
    db = Database(database_url)
    yield db
    await db.close()


async def backend_pid(db: Database) -> int:
    async with db.engine.connect() as connection:
        return int((await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def terminate(db: Database, pid: int) -> None:
    """The server drops that connection, as a restart would (asked on a connection of its own,
    outside the pool, so the pool holds only the dead one)."""
    dsn = db.url.replace("postgresql+asyncpg://", "postgresql://")
    admin = await asyncpg.connect(dsn)
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()


def count_pings(db: Database, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    pings: list[Any] = []
    real = db.engine.dialect.do_ping

    def do_ping(dbapi_connection: Any) -> bool:
        pings.append(dbapi_connection)
        return real(dbapi_connection)

    monkeypatch.setattr(db.engine.dialect, "do_ping", do_ping)
    return pings


async def test_a_connection_dropped_while_idle_is_replaced_before_use(
    postgres: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_S", 0.0)  # every return counts as idle
    pings = count_pings(postgres, monkeypatch)
    pid = await backend_pid(postgres)
    await terminate(postgres, pid)
    assert await backend_pid(postgres) != pid  # the dead one was pinged and replaced
    assert pings


async def test_a_connection_returned_moments_ago_is_used_without_a_ping(
    postgres: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_S", 3600.0)
    pings = count_pings(postgres, monkeypatch)
    first = await backend_pid(postgres)
    assert await backend_pid(postgres) == first  # the same pooled connection, reused
    async with postgres.session() as session:
        assert (await session.execute(text("SELECT 1"))).scalar_one() == 1
    assert pings == []
