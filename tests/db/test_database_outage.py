"""PostgreSQL unreachable for a while (DESIGN §1.13, Operations): `/healthz` says "degraded"
(503) while it is, and 200 "ok" again after; a message sent meanwhile is answered once it is
back; `palui doctor` explains a degraded daemon."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import pytest
import structlog
from structlog.testing import LogCapture

from palui.cli.doctor import run_doctor
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.fakes.tcp_cut import CuttableRelay
from tests.toolkit import started, wait_until


@pytest.fixture
async def relay(database_url: str) -> AsyncIterator[CuttableRelay]:
    if database_url.startswith("sqlite"):
        pytest.skip("the database is cut off by a TCP relay: PostgreSQL only")
    parts = urlsplit(database_url)
    relay = CuttableRelay(parts.hostname or "127.0.0.1", parts.port or 5432)
    await relay.start()
    yield relay
    await relay.close()


def through(database_url: str, relay: CuttableRelay) -> str:
    parts = urlsplit(database_url)
    host = parts.netloc.rsplit("@", 1)
    netloc = f"{host[0]}@127.0.0.1:{relay.port}" if len(host) == 2 else f"127.0.0.1:{relay.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def polled(fake_telegram: Any) -> int:
    return sum(r.method == "getUpdates" for r in fake_telegram.requests)


async def health(base: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.get(f"{base}/healthz") as response:
        return response.status, await response.json()


async def test_healthz_is_degraded_while_the_database_is_unreachable_and_ok_after(
    database_url, relay, start_palui, fake_telegram, fake_model, monkeypatch
) -> None:
    fake_model.reply("got it")
    app, base = await started(
        start_palui, fake_telegram, PALUI_DATABASE_URL=through(database_url, relay)
    )
    status, body = await health(base)
    assert (status, body["status"]) == (200, "ok")

    relay.cut()
    status, body = await health(base)
    assert (status, body["status"], body["database"]["reachable"]) == (503, "degraded", False)
    polls = polled(fake_telegram)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "are you there?")  # can't be stored yet
    await fake_telegram.wait_for_request("getUpdates", lambda _: polled(fake_telegram) >= polls + 2)
    assert fake_telegram.sent_messages(OWNER_CHAT) == []
    monkeypatch.setenv("PALUI_HTTP_PORT", str(app.http.port))  # where doctor finds the daemon
    out = io.StringIO()
    assert await run_doctor(None, out) == 1
    assert "is degraded: it can't reach its database" in out.getvalue()
    assert "answered once the database is back" in out.getvalue()

    relay.restore()
    [reply] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=60)
    assert reply["text"] == "got it"
    status, body = await health(base)
    assert (status, body["status"]) == (200, "ok")


async def test_a_turn_cut_off_by_the_database_is_answered_once_it_is_back_not_at_the_lapse(
    database_url, relay, start_palui, fake_telegram, fake_model, request
) -> None:
    asked, release = asyncio.Event(), asyncio.Event()

    async def brain(request: ModelRequest) -> Script:
        if not asked.is_set():
            asked.set()
            await release.wait()  # the turn is in flight when the database goes
        return Script(text="got it")

    fake_model.brain = brain
    await started(
        start_palui, fake_telegram, PALUI_DATABASE_URL=through(database_url, relay),
        PALUI_LEASE_TTL_S="600",  # its lease can't be what hands the chat back
    )  # fmt: skip
    records = LogCapture()
    before = structlog.get_config()
    structlog.configure(processors=[records])
    request.addfinalizer(lambda: structlog.configure(**before))
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "are you there?")
    await asked.wait()
    relay.cut()
    release.set()  # the turn's end can't be written: the database is away

    def worker_failed() -> bool:  # its turn's end could not be written
        return any(line["event"] == "chat_worker_failed" for line in records.entries)

    await wait_until(worker_failed)
    relay.restore()
    [reply] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=60)
    assert reply["text"] == "got it"
