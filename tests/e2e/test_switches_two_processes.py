"""Two real `palui run` processes (webhook mode, their own ports) on one PostgreSQL database: a
tap on process A's /connectors card — a tool switched off, a class set to destructive, the
connector paused — holds in the next turn process B runs. Nothing is shared but the database
(tests/memory/test_switches_across_processes.py does the same with two apps in one process)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.toolkit import TG_SECRET, Daemon, free_port, needs_postgres
from tests.toolkit import buttons as keyboard

pytestmark = pytest.mark.slow
WAIT_S = 300  # two daemons starting on a loaded machine


@pytest.fixture
async def two_daemons(
    database_url: str, with_notes: Any, settings_env: dict[str, str], tmp_path: Any, fake_telegram
) -> AsyncIterator[tuple[str, str]]:
    needs_postgres(database_url)
    daemons, urls = [], []
    for name in ("a", "b"):
        port = free_port()
        url = f"http://127.0.0.1:{port}/telegram"
        env = {**os.environ, **settings_env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        env.update(
            PALUI_HTTP_PORT=str(port), PALUI_TELEGRAM_WEBHOOK_URL=url,
            PALUI_TELEGRAM_WEBHOOK_SECRET=TG_SECRET, PALUI_DATA_DIR=str(tmp_path / name),
        )  # fmt: skip
        daemon = Daemon(env, str(tmp_path))
        await daemon.start()
        daemons.append(daemon)
        urls.append(url)
    try:
        for url in urls:
            await fake_telegram.wait_for_request(
                "setWebhook", lambda p, url=url: p["url"] == url, timeout=WAIT_S
            )
        yield urls[0], urls[1]
    finally:
        for daemon in daemons:
            await daemon.stop()


async def test_a_tap_on_process_a_holds_in_the_next_turn_process_b_runs(
    two_daemons: tuple[str, str], fake_telegram, fake_model
) -> None:
    url_a, url_b = two_daemons

    def brain(request: ModelRequest) -> Script:
        if "add" in request.last_user_text and request.messages[-1].get("role") == "user":
            arguments = json.dumps({"title": "t", "body": "b"})
            return Script(tool_calls=[("mcp-notes__add_note", arguments)])
        return Script(text="ok")

    fake_model.brain = brain

    async def deliver(update: int, url: str) -> None:
        assert await fake_telegram.deliver_to_webhook(update, url=url) == 200

    async def turn_on_b(text: str) -> ModelRequest:
        count = len(fake_model.requests)
        await deliver(fake_telegram.push_text(OWNER_CHAT, OWNER_ID, text), url_b)
        return await fake_model.wait_for_request(count + 1, timeout=WAIT_S)

    sheet: list[int] = []  # the notes card's message id

    def card() -> dict[str, Any]:
        return next(m for m in fake_telegram.sent_messages(OWNER_CHAT) if m["message_id"] in sheet)

    async def tap_on_a(label: str) -> None:
        edits = sum(r.method == "editMessageText" for r in fake_telegram.requests)
        message = card()
        update = fake_telegram.push_callback(
            OWNER_CHAT, OWNER_ID, message["message_id"], keyboard(message)[label]
        )
        await deliver(update, url_a)
        await fake_telegram.wait_for_request(
            "editMessageText",
            lambda _: sum(r.method == "editMessageText" for r in fake_telegram.requests) > edits,
            timeout=WAIT_S,
        )

    assert "mcp-notes__list_notes" in (await turn_on_b("what notes do I have")).tool_names
    await deliver(fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/connectors"), url_a)
    found = await fake_telegram.wait_for_text(OWNER_CHAT, "notes  ·", timeout=WAIT_S)
    sheet.append(found["message_id"])

    await tap_on_a("✅ list_notes")  # a tool switched off on A ...
    offered = (await turn_on_b("and now?")).tool_names
    assert "mcp-notes__list_notes" not in offered and "mcp-notes__search_notes" in offered

    for label in ("Change a class…", "add_note", "destructive"):  # ... a class set on A ...
        await tap_on_a(label)
    assert "destructive add_note" in card()["text"]
    await turn_on_b("add a note please")
    await fake_telegram.wait_for_request(
        "sendMessage", lambda p: "Approval needed" in str(p.get("text")), timeout=WAIT_S
    )  # ... makes B ask

    await tap_on_a("⏸ Pause")  # ... and a connector paused on A is paused on B
    assert "⏸ paused" in card()["text"]
    offered = (await turn_on_b("anything else?")).tool_names
    assert not [name for name in offered if name.startswith("mcp-notes__")]
