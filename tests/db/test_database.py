"""The schema and the repositories, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from palui.db import Database, Store
from palui.db.migrations import alembic_config
from palui.db.models import Base
from palui.domain import Role, TurnStatus
from palui.domain.turn_record import TurnEnd, TurnStart


@pytest.mark.empty_database
async def test_upgrade_then_downgrade_base_then_upgrade_again(database_url: str) -> None:
    db = Database(database_url)
    cfg = alembic_config(database_url)

    def run(connection: Any, revision: str, up: bool) -> None:
        cfg.attributes["connection"] = connection
        (command.upgrade if up else command.downgrade)(cfg, revision)

    try:
        for revision, up in (("head", True), ("base", False), ("head", True)):
            async with db.engine.begin() as connection:
                await connection.run_sync(run, revision, up)
        current, head = await db.revisions()
        assert current == head
    finally:
        await db.close()


async def test_migrations_create_exactly_the_models(store: Store) -> None:
    def diff(connection: Any) -> list[Any]:
        return compare_metadata(MigrationContext.configure(connection), Base.metadata)

    async with store.db.engine.connect() as connection:
        assert await connection.run_sync(diff) == []


async def test_a_redelivered_update_is_stored_once(store: Store) -> None:
    assert await store.inbox.add(10, 5, 7, {"text": "hi"}) is True
    assert await store.inbox.add(10, 5, 7, {"text": "hi"}) is False
    pending = await store.inbox.pending()
    assert [item.update_id for item in pending] == [10]
    await store.inbox.mark_done([10])
    assert await store.inbox.pending() == []


async def test_history_keeps_the_last_messages_in_order(store: Store) -> None:
    session = await store.chats.current_session(5)
    for n in range(5):
        turn = f"t{n}"
        await store.turns.start(TurnStart(turn, 5, [(100 + n, f"q{n}")], session_id=session))
        await store.turns.finish(TurnEnd(turn, TurnStatus.DONE, [100 + n], reply=f"a{n}"))
    history = await store.chats.history(session, 4)
    assert [(m.role, m.content) for m in history.messages] == [
        (Role.USER, "q3"), (Role.ASSISTANT, "a3"), (Role.USER, "q4"), (Role.ASSISTANT, "a4"),
    ]  # fmt: skip


async def test_rerunning_an_interrupted_turn_does_not_repeat_the_message(store: Store) -> None:
    session = await store.chats.current_session(5)
    await store.turns.start(TurnStart("first", 5, [(1, "hello")], session_id=session))
    assert (await store.recovery.recover_chat(5, "restart")).turns == 1
    await store.turns.start(TurnStart("second", 5, [(1, "hello")], session_id=session))
    history = await store.chats.history(session, 30)
    assert [m.content for m in history.messages] == ["hello"]


async def test_new_session_starts_empty(store: Store) -> None:
    first = await store.chats.current_session(5)
    await store.turns.start(TurnStart("t", 5, [(1, "hello")], session_id=first))
    second = await store.chats.new_session(5)
    assert second != first
    assert await store.chats.current_session(5) == second
    assert (await store.chats.history(second, 30)).messages == ()


async def test_concurrent_first_contact_creates_one_session(store: Store) -> None:
    sessions = await asyncio.gather(*(store.chats.current_session(9) for _ in range(5)))
    assert len(set(sessions)) == 1
    assert await store.chats.count_sessions(9) == 1
