"""Recovery with several processes on one database: a process starting (or sweeping) settles only
what a dead process left in flight, never a live one's turn, call or claim (DESIGN §3)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sqlalchemy import select

from palui.chat.leases import ChatLeases
from palui.chat.recovery import Recovery
from palui.db import Database, Store
from palui.db.models import ActionRow, CallRecordRow, PausedTurn, Turn
from palui.db.recovery import Recovered
from palui.domain import CallChange, CallStage, CallStatus, StageEntry
from palui.domain.turn_record import CallKey, TurnStart
from palui.http.server import HttpServer
from palui.webhooks.specs import WebhookSpec
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.toolkit import (
    ELSEWHERE,
    buttons,
    needs_postgres,
    start_in_webhook_mode,
    tool_results,
    turn_statuses,
    wait_for_card,
    wait_until,
)
from tests.toolkit import GITHUB_SECRET as SECRET
from tests.toolkit import post_json as post
from tests.toolkit import script_call as call

# -- through two running Palui processes ---------------------------------------------------------


async def test_a_process_starting_mid_turn_leaves_the_other_process_turn_running(
    database_url, start_palui, fake_telegram, fake_model
) -> None:
    needs_postgres(database_url)
    release = asyncio.Event()

    async def brain(request: ModelRequest) -> Script:
        await release.wait()
        return Script(text="the answer")

    fake_model.brain = brain
    first, url = await start_in_webhook_mode(start_palui, fake_telegram)
    update = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "a question")
    assert await fake_telegram.deliver_to_webhook(update, url=url) == 200
    await fake_model.wait_until_in_flight()

    await start_in_webhook_mode(start_palui, fake_telegram)  # e.g. a deploy adds a replica
    assert await turn_statuses(first.app.store) == ["running"]

    release.set()
    [reply] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    assert reply["text"] == "the answer"
    assert await turn_statuses(first.app.store) == ["done"]
    assert len(fake_model.requests) == 1  # answered once, by the first process


async def test_a_process_starting_while_another_resumes_an_approved_turn_leaves_its_claim(
    database_url, with_notes, start_palui, fake_telegram, fake_model
) -> None:
    needs_postgres(database_url)
    release = asyncio.Event()

    async def brain(request: ModelRequest) -> Script:
        results = tool_results(request)
        if not results:
            return call("mcp-notes__search_notes", query="milk")  # untrusted: taints the turn
        if len(results) == 1:
            return call("mcp-notes__delete_note", id="1")
        await release.wait()  # resumed after the tap: the approved delete ran
        return Script(text="Deleted it.")

    fake_model.brain = brain
    first, url = await start_in_webhook_mode(start_palui, fake_telegram)
    update = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "find milk")
    assert await fake_telegram.deliver_to_webhook(update, url=url) == 200
    card = await wait_for_card(fake_telegram)
    approve = buttons(card)["✅ Approve"]
    tap = fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], approve)
    assert await fake_telegram.deliver_to_webhook(tap, url=url) == 200
    await fake_model.wait_until_in_flight()  # the first process has claimed and resumed it
    assert json.loads(with_notes.read_text()) == {}

    await start_in_webhook_mode(start_palui, fake_telegram)
    async with first.app.db.session() as s:
        claims = list(await s.scalars(select(PausedTurn.claimed_at)))
    assert len(claims) == 1 and claims[0] is not None  # not released for a second resume

    release.set()
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: p.get("text") == "Deleted it."
    )
    await first.app.chats.wait_idle(OWNER_CHAT)
    texts = [m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT)]
    assert texts.count("Deleted it.") == 1
    assert len(fake_model.requests) == 3
    async with first.app.db.session() as s:
        runs = list(
            await s.scalars(select(CallRecordRow.status).where(CallRecordRow.tool.like("%del%")))
        )
    assert runs == ["ok"]


async def test_a_chat_left_mid_turn_by_a_process_that_died_elsewhere_is_taken_over(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.reply("here I am")
    palui = await start_palui()
    await palui.app.serving.wait()  # its own look for work left undone is over
    store = palui.app.store
    # After this process started, one on another host died mid-turn; its lease has lapsed.
    session = await store.chats.current_session(OWNER_CHAT)
    await store.turns.start(TurnStart("died-elsewhere", OWNER_CHAT, session_id=session))
    assert await store.leases.acquire(OWNER_CHAT, ELSEWHERE, ttl_s=-1)

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "anyone there?")
    [reply] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    assert reply["text"] == "here I am"
    async with store.db.session() as s:
        dead = await s.get_one(Turn, "died-elsewhere")
    assert dead.status == "failed" and dead.error and "stopped" in dead.error


async def test_a_reply_another_process_is_sending_is_left_to_it_and_nothing_is_lost(
    store: Store, start_palui, fake_telegram, fake_model
) -> None:
    await store.outbox.add(OWNER_CHAT, "a reply being sent elsewhere")
    assert await store.delivery_leases.acquire(OWNER_CHAT, ELSEWHERE, ttl_s=600)
    await start_palui()  # its start-up delivery leaves the chat to the sender
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/help")

    async def help_answered() -> bool:  # the command is handled: its reply waits in the outbox
        return len(await store.outbox.pending(OWNER_CHAT)) == 2

    await wait_until(help_answered)
    assert fake_telegram.sent_messages(OWNER_CHAT) == []

    await store.delivery_leases.release(OWNER_CHAT, ELSEWHERE)  # that process went away
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/help")
    sent = await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    assert sent[0]["text"] == "a reply being sent elsewhere"
    assert [m["text"] for m in sent[1:]] == [sent[1]["text"]] * 2
    assert sent[1]["text"].startswith("I'm Palui")


async def test_start_clears_the_delivery_leases_of_a_dead_process_on_this_host(
    store: Store,
) -> None:
    leases, senders = ChatLeases(store.leases), ChatLeases(store.delivery_leases)
    host = senders.holder.split(":", 1)[0]
    assert await store.delivery_leases.acquire(7, f"{host}:999999999:deadbeef", ttl_s=600)
    await Recovery(store.recovery, leases, senders).at_start()
    async with senders.hold(7) as held:
        assert held


# -- the recovery itself -------------------------------------------------------------------------


async def in_flight(store: Store, chat_id: int) -> None:
    """A turn mid-call (call, execution, ledger action in flight) and a claimed paused turn."""
    session = await store.chats.current_session(chat_id)
    turn, paused = f"turn-{chat_id}", f"paused-{chat_id}"
    await store.turns.start(TurnStart(turn, chat_id, session_id=session))
    running = StageEntry(CallStage.EXECUTE, "running")
    change = CallChange("mcp-mail__send", running, status=CallStatus.RUNNING, went_out=True)
    await store.tool_calls.save(CallKey(turn, chat_id, 1, "c1"), change)
    claim = await store.actions.claim(f"key-{chat_id}", chat_id, "mcp-mail__send", "{}", turn)
    assert claim.state == "new"
    await store.turns.start(TurnStart(paused, chat_id, session_id=session))
    await store.approvals.pause_turn(paused, chat_id, "{}", [])
    assert await store.approvals.claim_resume(paused) is not None


async def states(store: Store, chat_id: int) -> dict[str, Any]:
    async with store.db.session() as s:
        turn = await s.get_one(Turn, f"turn-{chat_id}")
        call_ = await s.scalar(select(CallRecordRow).where(CallRecordRow.turn_id == turn.id))
        action = await s.scalar(select(ActionRow).where(ActionRow.chat_id == chat_id))
        paused = await s.get_one(PausedTurn, f"paused-{chat_id}")
        assert call_ is not None and action is not None
        return {
            "turn": turn.status, "call": call_.status,
            "step": json.loads(call_.stages)[-1]["outcome"],
            "action": action.state, "claimed": paused.claimed_at is not None,
        }  # fmt: skip


IN_FLIGHT = {"turn": "running", "call": "running", "step": "running", "action": "in_progress",
             "claimed": True}  # fmt: skip
SETTLED = {"turn": "failed", "call": "unknown", "step": "unknown", "action": "unknown",
           "claimed": False}  # fmt: skip


async def test_start_settles_chats_no_live_process_holds_and_leaves_held_ones(
    store: Store,
) -> None:
    live, dead, unleased = 101, 102, 103
    for chat_id in (live, dead, unleased):
        await in_flight(store, chat_id)
    assert await store.leases.acquire(live, ELSEWHERE, ttl_s=600)
    assert await store.leases.acquire(dead, "another-host:99:cafe0002", ttl_s=-1)  # lapsed

    recovery = Recovery(store.recovery, ChatLeases(store.leases))
    recovered = await recovery.at_start()

    assert recovered == Recovered(turns=2, calls=2, actions=2, claims=2)
    assert await states(store, live) == IN_FLIGHT
    assert await states(store, dead) == SETTLED
    assert await states(store, unleased) == SETTLED
    assert await recovery.orphaned() == []


async def test_a_live_holder_that_dies_is_found_by_the_sweep_and_settled_by_the_next_holder(
    store: Store,
) -> None:
    chat_id = 104
    await in_flight(store, chat_id)
    assert await store.leases.acquire(chat_id, ELSEWHERE, ttl_s=600)
    leases = ChatLeases(store.leases)
    recovery = Recovery(store.recovery, leases)
    kicked: asyncio.Queue[int] = asyncio.Queue()
    sweep = asyncio.create_task(recovery.sweep(kicked.put_nowait, every_s=0.01))
    try:
        assert await recovery.orphaned() == []
        assert await store.leases.acquire(chat_id, ELSEWHERE, ttl_s=-1)  # it stopped renewing
        assert await asyncio.wait_for(kicked.get(), 10) == chat_id
    finally:
        sweep.cancel()
        await asyncio.gather(sweep, return_exceptions=True)
    assert await states(store, chat_id) == IN_FLIGHT  # a kick settles nothing by itself
    async with leases.hold(chat_id) as held:
        assert held
        await recovery.chat_taken(chat_id)
    assert await states(store, chat_id) == SETTLED


async def test_the_webhook_rate_is_shared_by_every_process_on_the_database(
    database_url: str, store: Store
) -> None:
    stored: list[int] = []
    spec = WebhookSpec("github", OWNER_CHAT, SECRET)
    other = Database(database_url)  # a second process's own connection pool
    servers = [
        HttpServer(
            repo,
            host="127.0.0.1",
            port=0,
            webhooks={"github": spec},
            on_webhook_stored=stored.append,
            rate_per_min=2,
        )
        for repo in (store, Store(other))
    ]
    headers = {"X-Palui-Secret": SECRET, "Content-Type": "application/json"}
    try:
        for server in servers:
            await server.start()
        urls = [f"{server.url}/webhooks/github" for server in servers]
        statuses = [(await post(url, b'{"n": 1}', headers))[0] for url in (*urls, urls[1])]
    finally:
        for server in servers:
            await server.stop()
        await other.close()
    assert statuses == [202, 202, 429]
    assert await store.webhooks.chats_pending() == [OWNER_CHAT]
    assert stored == [OWNER_CHAT, OWNER_CHAT]
