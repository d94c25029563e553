"""/stop with several processes on one database: the process that receives it need not be the one
running the chat's turn; the turn stops all the same, and the person is told once (DESIGN §1.1)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select

from palui.db.models import CallRecordRow, StopRequest, Turn
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.test_approvals_flow import call, scripted
from tests.test_process_recovery import needs_postgres, start_in_webhook_mode, turn_statuses
from tests.test_telegram_flow import texts

INTERRUPTED = "Stopped.\nmcp-notes__slow_op was interrupted; it may or may not have completed."


async def send(fake_telegram: Any, url: str, text: str) -> None:
    update = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, text)
    assert await fake_telegram.deliver_to_webhook(update, url=url) == 200


async def until_tool_running(app: Any) -> None:
    # A read call is recorded once it ends (palui.tools.record): the turn's calls in flight
    # say when it is out. Nothing to await.
    async with asyncio.timeout(20):
        while True:
            chats = app.chats  # set once the app serves
            turns = chats._workers._turns.running.values() if chats is not None else ()
            if any(running.tools.in_flight() for running in turns):
                return
            await asyncio.sleep(0.05)


async def test_a_stop_sent_to_another_process_stops_the_tool_call_running_here(
    database_url, with_notes, mcp_in_process, start_palui, fake_telegram, fake_model
) -> None:
    # The notes server runs in this process: the processes this test is about are the two
    # Palui instances sharing the database, not the tool server.
    needs_postgres(database_url)
    fake_model.brain = scripted(call("mcp-notes__slow_op", seconds=30), Script(text="next"))
    running, running_url = await start_in_webhook_mode(start_palui, fake_telegram)
    _, other_url = await start_in_webhook_mode(start_palui, fake_telegram)
    await send(fake_telegram, running_url, "do the slow thing")
    await until_tool_running(running.app)

    await send(fake_telegram, other_url, "/stop")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert texts(replies) == ["Stopping…", INTERRUPTED]
    await running.app.chats.wait_idle(OWNER_CHAT)
    assert await turn_statuses(running.app.store) == ["cancelled"]
    async with running.app.db.session() as s:
        assert list(await s.scalars(select(CallRecordRow.status))) == ["unknown"]
        assert list(await s.scalars(select(StopRequest))) == []  # taken

    await send(fake_telegram, running_url, "hello")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    assert texts(replies) == ["Stopping…", INTERRUPTED, "next"]  # told once, then on as usual


async def test_a_stop_sent_to_another_process_cancels_the_model_call_running_here(
    database_url, start_palui, fake_telegram, fake_model
) -> None:
    needs_postgres(database_url)
    fake_model.queue(Script(hang=True), Script(text="fresh answer"))
    _, running_url = await start_in_webhook_mode(start_palui, fake_telegram)
    _, other_url = await start_in_webhook_mode(start_palui, fake_telegram)
    await send(fake_telegram, running_url, "think hard")
    await fake_model.wait_until_in_flight()

    await send(fake_telegram, other_url, "/stop")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert texts(replies) == ["Stopping…", "Stopped."]
    await fake_model.wait_for_disconnects()

    await send(fake_telegram, other_url, "hello again")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    assert texts(replies) == ["Stopping…", "Stopped.", "fresh answer"]


async def test_a_stop_request_for_a_finished_turn_never_stops_the_next_turn(
    database_url, start_palui, fake_telegram, fake_model
) -> None:
    needs_postgres(database_url)
    release = asyncio.Event()

    async def brain(request: ModelRequest) -> Script:
        if len(fake_model.requests) == 1:
            return Script(text="first answer")
        await release.wait()
        return Script(text="second answer")

    fake_model.brain = brain
    running, running_url = await start_in_webhook_mode(start_palui, fake_telegram)
    _, other_url = await start_in_webhook_mode(start_palui, fake_telegram)
    await send(fake_telegram, running_url, "one")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    await running.app.chats.wait_idle(OWNER_CHAT)

    await send(fake_telegram, other_url, "/stop")  # too late: that turn has ended
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert texts(replies)[1] == "Nothing is running."

    # A request that raced with the first turn's end is left behind; the next turn must not
    # take it. Wait until the next turn's watcher has looked a few times.
    store = running.app.store
    async with store.db.session() as s:
        [first_turn] = list(await s.scalars(select(Turn.id)))
    async with store.db.session() as s, s.begin():
        s.add(StopRequest(turn_id=first_turn, chat_id=OWNER_CHAT))
    polled: list[str] = []
    looked = asyncio.Event()
    requested = store.stop_requests.requested

    async def spy(turn_id: str) -> bool:
        polled.append(turn_id)
        if len(polled) >= 3:
            looked.set()
        return await requested(turn_id)

    store.stop_requests.requested = spy  # type: ignore[method-assign]
    await send(fake_telegram, running_url, "two")
    await fake_model.wait_until_in_flight()
    async with asyncio.timeout(10):
        await looked.wait()
    release.set()

    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    assert texts(replies)[2] == "second answer"
    assert first_turn not in polled
    assert await turn_statuses(store) == ["done", "done"]
