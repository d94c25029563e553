"""Several Palui processes on one PostgreSQL database: one chat's turns still run one at a time."""

from __future__ import annotations

import asyncio
import socket

import pytest

from palui.chat.leases import ChatLeases
from palui.db import Store
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script

TG_SECRET = "tg-webhook-secret-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_two_processes_in_webhook_mode_run_a_chats_turns_one_at_a_time(
    database_url, start_palui, fake_telegram, fake_model
) -> None:
    if database_url.startswith("sqlite"):
        pytest.skip("several processes share a PostgreSQL database")
    release = asyncio.Event()
    most_at_once = 0

    async def brain(request: ModelRequest) -> Script:
        nonlocal most_at_once
        most_at_once = max(most_at_once, fake_model.in_flight)
        number = len(fake_model.requests)
        if number == 1:
            await release.wait()
        return Script(text=f"answer {number}")

    fake_model.brain = brain
    ports = free_port(), free_port()
    apps = []
    for port in ports:
        palui = await start_palui(
            PALUI_HTTP_PORT=str(port),
            PALUI_TELEGRAM_WEBHOOK_URL=f"http://127.0.0.1:{port}/telegram",
            PALUI_TELEGRAM_WEBHOOK_SECRET=TG_SECRET,
        )
        await fake_telegram.wait_for_request(
            "setWebhook", lambda p, port=port: str(port) in p["url"]
        )
        apps.append(palui.app)
    second = apps[1]
    urls = [f"http://127.0.0.1:{port}/telegram" for port in ports]

    one = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "first question")
    assert await fake_telegram.deliver_to_webhook(one, url=urls[0]) == 200
    await fake_model.wait_until_in_flight()  # the first process runs the chat's turn

    # The load balancer hands the next message to the other process: stored, but not run now.
    two = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "second question")
    assert await fake_telegram.deliver_to_webhook(two, url=urls[1]) == 200
    await second.chats.wait_idle(OWNER_CHAT)  # its worker saw the lease taken and stepped back
    assert len(fake_model.requests) == 1

    release.set()
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=30)
    assert [m["text"] for m in replies] == ["answer 1", "answer 2"]
    assert most_at_once == 1
    assert len(fake_model.requests) == 2
    history = [m["content"] for m in fake_model.requests[1].messages[1:]]
    assert history == ["first question", "answer 1", "second question"]


async def test_a_lease_is_exclusive_renewable_and_lapses(store: Store) -> None:
    one, two = ChatLeases(store.leases, ttl_s=60), ChatLeases(store.leases, ttl_s=60)
    async with one.hold(7) as held:
        assert held
        async with two.hold(7) as other:
            assert not other
        async with two.hold(8) as other_chat:
            assert other_chat
    async with two.hold(7) as after_release:
        assert after_release
    assert await store.leases.acquire(9, "gone-host:1:x", ttl_s=-1)  # already lapsed
    async with one.hold(9) as taken_over:
        assert taken_over


async def test_a_restart_releases_the_leases_of_a_dead_process_on_this_host(store: Store) -> None:
    leases = ChatLeases(store.leases)
    host = leases.holder.split(":", 1)[0]
    dead = f"{host}:999999999:deadbeef"  # no such pid
    assert await store.leases.acquire(5, dead, ttl_s=600)
    assert await leases.clear_dead() == 1
    async with leases.hold(5) as held:
        assert held
