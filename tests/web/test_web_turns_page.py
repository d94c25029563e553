"""The Turns pages over stored turns, with a fixed viewer (tests/fakes/web_console.py): only the
viewer's chats, and the chat, kind and status filters."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient, TestServer

from palui.db import Store
from palui.domain import TurnKind, TurnStatus
from palui.domain.turn_record import TurnEnd, TurnStart
from palui.web.viewer import Viewer
from tests.fakes.web_console import console_with_viewer, web_deps

ANA, BOB = 1001, 2002


async def seed(
    store: Store,
    turn_id: str,
    chat_id: int,
    update_id: int,
    text: str,
    kind: TurnKind = TurnKind.CHAT,
    status: TurnStatus = TurnStatus.DONE,
) -> None:
    await store.inbox.add(update_id, chat_id, chat_id, {"text": text})
    session_id = await store.chats.current_session(chat_id)
    await store.turns.start(
        TurnStart(turn_id, chat_id, [(update_id, text)], kind=kind, session_id=session_id)
    )
    await store.turns.finish(TurnEnd(turn_id, status, [update_id], reply="ok", steps=1))


@pytest.fixture
async def client(store: Store) -> AsyncIterator[TestClient]:
    await seed(store, "t1", ANA, 1, "hello there")
    await seed(store, "t2", BOB, 2, "the secret of bob")
    await seed(store, "t3", ANA, 3, "every morning", TurnKind.SCHEDULED, TurnStatus.FAILED)
    deps = web_deps(store, allowed_users=frozenset({ANA, BOB}))
    app = console_with_viewer(deps, Viewer(ANA, frozenset({ANA}), "csrf", "@ana"))
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


async def page(client: TestClient, path: str, status: int = 200) -> str:
    answer = await client.get(path)
    assert answer.status == status
    return await answer.text()


async def test_the_list_shows_only_the_viewers_chats_newest_first(client: TestClient) -> None:
    listed = await page(client, "/ui/turns")
    assert "the secret of bob" not in listed
    assert listed.index("every morning") < listed.index("hello there")
    assert "the secret of bob" not in await page(client, f"/ui/turns?chat={BOB}")
    await page(client, "/ui/turns/t2", 404)


async def test_the_filters_narrow_the_list(client: TestClient) -> None:
    scheduled = await page(client, "/ui/turns?kind=scheduled")
    assert "every morning" in scheduled and "hello there" not in scheduled
    done = await page(client, "/ui/turns?status=done")
    assert "hello there" in done and "every morning" not in done
    assert "hello there" in await page(client, "/ui/turns?kind=bogus&status=bogus")


async def test_a_turn_without_calls_says_so(client: TestClient) -> None:
    shown = await page(client, "/ui/turns/t1")
    assert "hello there" in shown and "No tool calls in this turn." in shown
