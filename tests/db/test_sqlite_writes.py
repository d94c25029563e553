"""SQLite under concurrent writes: serialised BEGIN IMMEDIATE transactions never lock, and a
turn that fails on a database write tells the truth about what ran."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from palui.config import Settings
from palui.db import Database
from tests import toolkit
from tests.fakes.memory_channel import in_memory_settings, running_palui, switch_on
from tests.fakes.notes_toolset import NOTES_ID, SWITCHED_ON, NotesToolset

NOTHING_RUN = "Something went wrong on my side, sorry. Nothing was run. Try again?"
TASKS = 50
WRITES = 6


async def _counter_db(tmp_path: Path) -> Database:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'writes.db'}")
    async with db.session() as s, s.begin():
        await s.execute(text("CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER)"))
        await s.execute(text("INSERT INTO counters (id, n) VALUES (1, 0)"))
    return db


async def test_many_tasks_writing_at_once_beside_a_long_reader_never_lock(
    tmp_path: Path,
) -> None:
    db = await _counter_db(tmp_path)
    reader_open = asyncio.Event()
    writers_done = asyncio.Event()

    async def long_reader() -> int:
        async with db.session() as s:
            first = await s.scalar(text("SELECT n FROM counters WHERE id = 1"))
            reader_open.set()
            await writers_done.wait()  # a read transaction open across all the writes
            return int(first or 0)

    async def writer(task: int) -> None:
        for write in range(WRITES):
            # Read, then write, in one transaction: the shape that upgraded and locked before.
            async with db.session() as s, s.begin():
                n = await s.scalar(text("SELECT n FROM counters WHERE id = 1"))
                await s.execute(text("UPDATE counters SET n = :n WHERE id = 1"), {"n": n + 1})
                await s.execute(
                    text("INSERT INTO counters (id, n) VALUES (:id, 0)"),
                    {"id": 1000 + task * WRITES + write},
                )
                await asyncio.sleep(0)  # let the other tasks try to write meanwhile

    try:
        reader = asyncio.create_task(long_reader())
        await reader_open.wait()
        results = await asyncio.gather(*(writer(t) for t in range(TASKS)), return_exceptions=True)
        writers_done.set()
        assert await reader == 0
        assert [r for r in results if isinstance(r, BaseException)] == []
        async with db.session() as s:
            assert await s.scalar(text("SELECT n FROM counters WHERE id = 1")) == TASKS * WRITES
            rows = await s.scalar(text("SELECT count(*) FROM counters"))
            assert rows == 1 + TASKS * WRITES
    finally:
        await db.close()


async def test_a_reader_does_not_wait_for_an_open_write_transaction(tmp_path: Path) -> None:
    db = await _counter_db(tmp_path)
    try:
        async with db.session() as w, w.begin():
            await w.execute(text("UPDATE counters SET n = 5 WHERE id = 1"))
            async with db.session() as r:  # WAL: the committed value, at once
                assert await r.scalar(text("SELECT n FROM counters WHERE id = 1")) == 0
    finally:
        await db.close()


async def test_a_failed_write_transaction_leaves_nothing_and_frees_the_writer(
    tmp_path: Path,
) -> None:
    db = await _counter_db(tmp_path)
    try:
        try:
            async with db.session() as s, s.begin():
                await s.execute(text("UPDATE counters SET n = 9 WHERE id = 1"))
                raise ValueError("boom")
        except ValueError:
            pass
        async with db.session() as s, s.begin():  # the lock was released
            assert await s.scalar(text("SELECT n FROM counters WHERE id = 1")) == 0
    finally:
        await db.close()


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


def _failing_call_records(monkeypatch: pytest.MonkeyPatch, app: Any, *, when: str) -> None:
    """The seam: the call records' store raises a database error — on the record of a call's
    end (after the tool ran), or on the first record of all (before anything went out)."""
    save = app.store.tool_calls.save

    async def failing(key: Any, change: Any, **more: Any) -> int | None:
        if when == "always" or (when == "after_run" and change.settles):
            raise OperationalError("UPDATE call_records", {}, Exception("database is locked"))
        return await save(key, change, **more)

    monkeypatch.setattr(app.store.tool_calls, "save", failing)


async def test_a_turn_whose_database_write_fails_after_a_write_tool_ran_says_what_ran(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = (
        toolkit.call("mcp-notes__add_note", {"title": "Call", "body": "mum"}),
        toolkit.answer("Added."),
    )
    model, notes = toolkit.ScriptedModel(steps), NotesToolset()
    async with running_palui(settings, model, toolsets=[notes]) as (app, chat):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        _failing_call_records(monkeypatch, app, when="after_run")
        await chat.send("note: call mum")
        assert notes.ran("add_note") == 1
        (told,) = chat.texts()
        assert "Nothing was run" not in told
        assert "after I ran mcp-notes__add_note; it did run." in told


async def test_a_turn_that_fails_before_any_tool_ran_says_nothing_was_run(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = (
        toolkit.call("mcp-notes__add_note", {"title": "Call", "body": "mum"}),
        toolkit.answer("Added."),
    )
    model, notes = toolkit.ScriptedModel(steps), NotesToolset()
    async with running_palui(settings, model, toolsets=[notes]) as (app, chat):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        _failing_call_records(monkeypatch, app, when="always")
        await chat.send("note: call mum")
        assert notes.ran("add_note") == 0
        assert chat.texts() == [NOTHING_RUN]


async def test_a_read_tool_that_ran_before_a_failure_still_counts_as_nothing_run(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = (toolkit.call("mcp-notes__list_notes", {}), toolkit.answer("Your notes."))
    model, notes = toolkit.ScriptedModel(steps), NotesToolset()
    async with running_palui(settings, model, toolsets=[notes]) as (app, chat):
        _failing_call_records(monkeypatch, app, when="after_run")
        await chat.send("my notes?")
        assert notes.ran("list_notes") == 1
        assert chat.texts() == [NOTHING_RUN]
