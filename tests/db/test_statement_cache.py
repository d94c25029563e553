"""Every statement a steady-state turn runs comes from SQLAlchemy's compiled cache (issue 14).

Building and compiling a statement anew is CPU on the daemon's one event-loop thread, paid per
turn; a statement that hits the cache pays neither the compile nor (for prebuilt ones) most of
the build. Counted through the real app on the engine: each statement's
`ExecutionContext.cache_hit` after two warm-up turns (the chat's first turn and the first one in
a conversation compile what they meet first). A count, never a timing.

Left apart: transaction control (BEGIN), which SQLAlchemy issues on the driver below its cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine.interfaces import CacheStats

from palui.config import Settings
from tests import toolkit
from tests.fakes.memory_channel import in_memory_settings, running_palui
from tests.fakes.notes_toolset import NotesToolset


@contextmanager
def cache_use(engine: Any) -> Iterator[list[tuple[CacheStats, str]]]:
    """(cache outcome, SQL) of each statement run on `engine` while inside."""
    seen: list[tuple[CacheStats, str]] = []

    def after(_conn: Any, _cursor: Any, statement: str, _p: Any, context: Any, _m: Any) -> None:
        text = " ".join(statement.split())
        if context is not None and not text.upper().startswith("BEGIN"):
            seen.append((context.cache_hit, text))

    event.listen(engine.sync_engine, "after_cursor_execute", after)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "after_cursor_execute", after)


@pytest.fixture
async def settings(database_url: str, tmp_path: Path, store: Any) -> Settings:
    assert await store.retention.claim_daily(datetime.now(UTC))  # no prune timer in the count
    return in_memory_settings(
        database_url, str(tmp_path / "data"), daily_token_cap=0, runs_per_hour=0
    )


async def test_a_steady_state_read_tool_turn_compiles_no_statement_anew(
    settings: Settings,
) -> None:
    turn = (toolkit.call("mcp-notes__list_notes"), toolkit.answer("You have one note."))
    model = toolkit.ScriptedModel([*turn] * 4)
    async with running_palui(settings, model, toolsets=[NotesToolset()]) as (app, chat):
        await chat.send("what notes do I have")  # the chat, its session: first compiles
        await chat.send("and what notes now")  # the first turn in a conversation
        with cache_use(app.db.engine) as seen:
            await chat.send("any notes today")
            await chat.send("and notes once more")
        assert chat.texts() == ["You have one note."] * 4
    assert len(seen) >= 20  # both turns were counted (13 statements each, timers aside)
    missed = [f"{hit.name}: {sql[:160]}" for hit, sql in seen if hit is not CacheStats.CACHE_HIT]
    assert not missed, "\n".join(missed)
