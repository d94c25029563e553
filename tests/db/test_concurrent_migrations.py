"""Two processes starting together on one empty PostgreSQL database both come up: one migrates,
the other waits for it and finds the schema at head (found by bench/kill_trials.py --procs 2,
where one of two `palui run` failed on a duplicate type while both created the tables)."""

from __future__ import annotations

import asyncio

import pytest

from palui.db import Database
from tests.toolkit import needs_postgres


@pytest.mark.empty_database
async def test_two_migrations_at_once_on_an_empty_database_both_succeed(database_url: str) -> None:
    needs_postgres(database_url)
    first, second = Database(database_url), Database(database_url)
    try:
        await asyncio.gather(first.migrate(), second.migrate())
        for db in (first, second):
            current, head = await db.revisions()
            assert current == head
    finally:
        await first.close()
        await second.close()
