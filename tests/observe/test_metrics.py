"""`GET /metrics` through Palui's real HTTP server (DESIGN §1.13, Operations): Prometheus text,
counted where each event happens; loopback only, or behind `[http] metrics_token`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from palui.observe import Metrics
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.toolkit import started

TOKEN = "metrics-token-0123456789abcdef"

NAMES = (
    "palui_turns_total",
    "palui_turn_seconds",
    "palui_first_answer_seconds",
    "palui_model_calls_total",
    "palui_model_tokens_total",
    "palui_tool_calls_total",
    "palui_cards_waiting",
    "palui_outbox_waiting",
    "palui_outbox_oldest_seconds",
    "palui_inbox_waiting",
    "palui_lease_takeovers_total",
    "palui_stale_writes_refused_total",
    "palui_caps_hit_total",
    "palui_connector_state",
    "palui_sends_total",
)


async def scrape(base: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{base}/metrics", headers=headers or {}) as response,
    ):
        return response.status, await response.text()


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample in Prometheus text (None: not there)."""
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        key, value = line.rsplit(" ", 1)
        metric, _, rest = key.partition("{")
        found = dict(part.split("=", 1) for part in rest.rstrip("}").split(",") if "=" in part)
        if metric == name and {k: v.strip('"') for k, v in found.items()} == labels:
            return float(value)
    return None


async def test_a_turn_moves_the_counters_and_the_page_names_every_metric(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.reply("hello there")
    app, base = await started(start_palui, fake_telegram)
    status, before = await scrape(base)
    assert status == 200
    for name in NAMES:
        assert f"# TYPE {name.removesuffix('_total')}" in before, name
    assert sample(before, "palui_turns_total", kind="chat", outcome="done") is None

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    await fake_telegram.wait_for_text(OWNER_CHAT, "hello there")
    await app.chats.wait_idle(OWNER_CHAT)
    _, after = await scrape(base)
    assert sample(after, "palui_turns_total", kind="chat", outcome="done") == 1
    assert sample(after, "palui_turn_seconds_count", kind="chat") == 1
    assert sample(after, "palui_first_answer_seconds_count") == 1
    model = app.model.name
    assert sample(after, "palui_model_calls_total", model=model, outcome="ok") == 1, after
    prompt = sample(after, "palui_model_tokens_total", model=model, direction="prompt")
    assert prompt is not None and prompt > 0
    assert sample(after, "palui_outbox_waiting") == 0
    assert "sk-test" not in after


async def test_tool_calls_are_counted_by_class_and_decision(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    def brain(request: ModelRequest) -> Script:
        if not [m for m in request.messages if m["role"] == "tool"]:
            return Script(tool_calls=[("mcp-notes__list_notes", "{}")])
        return Script(text="You have one note.")

    fake_model.brain = brain
    app, base = await started(start_palui, fake_telegram)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "what notes do I have?")
    await fake_telegram.wait_for_text(OWNER_CHAT, "You have one note.")
    await app.chats.wait_idle(OWNER_CHAT)
    _, text = await scrape(base)
    assert sample(text, "palui_tool_calls_total", tool_class="read", decision="run") == 1
    assert sample(text, "palui_model_calls_total", model=app.model.name, outcome="ok") == 2
    assert sample(text, "palui_connector_state", connector="mcp-notes", state="connected") == 1


@pytest.fixture
def metrics_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    config = tmp_path / "palui-metrics.toml"
    config.write_text(f"[http]\nmetrics_token = {json.dumps(TOKEN)}\n")
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    return TOKEN


async def test_metrics_need_the_token_once_one_is_set(
    metrics_token: str, start_palui, fake_telegram
) -> None:
    _, base = await started(start_palui, fake_telegram)
    assert (await scrape(base))[0] == 401
    assert (await scrape(base, {"Authorization": "Bearer wrong-token-0123456789"}))[0] == 401
    status, text = await scrape(base, {"Authorization": f"Bearer {metrics_token}"})
    assert (status == 200 and "palui_turns_total" not in text) or "# TYPE palui_turns" in text
    assert metrics_token not in text


async def test_without_a_token_only_a_loopback_client_gets_metrics(
    start_palui, fake_telegram
) -> None:
    # Behind a trusted proxy, the client is who X-Forwarded-For names: not loopback.
    _, base = await started(start_palui, fake_telegram, PALUI_HTTP_TRUSTED_PROXIES="127.0.0.1/32")
    assert (await scrape(base))[0] == 200
    assert (await scrape(base, {"X-Forwarded-For": "203.0.113.7"}))[0] == 403


async def test_a_request_relayed_by_a_local_proxy_is_not_a_loopback_client(
    start_palui, fake_telegram
) -> None:
    _, base = await started(start_palui, fake_telegram)  # no trusted proxies
    assert (await scrape(base))[0] == 200
    assert (await scrape(base, {"X-Forwarded-For": "203.0.113.7"}))[0] == 403
    assert (await scrape(base, {"Forwarded": "for=203.0.113.7"}))[0] == 403


def test_two_apps_count_apart() -> None:
    one, two = Metrics(), Metrics()
    one.turn_ended("chat", "done", 1.0)
    assert sample(one.render().decode(), "palui_turns_total", kind="chat", outcome="done") == 1
    assert sample(two.render().decode(), "palui_turns_total", kind="chat", outcome="done") is None


def test_the_oldest_waiting_reply_ages_from_memory(monkeypatch: Any) -> None:
    from datetime import UTC, datetime

    now = [datetime(2026, 12, 4, 12, 0, tzinfo=UTC).timestamp() + 90]
    metrics = Metrics(clock=lambda: now[0])
    metrics.outbox_waits(7, 2, datetime(2026, 12, 4, 12, 0, tzinfo=UTC))
    text = metrics.render().decode()
    assert sample(text, "palui_outbox_waiting") == 2
    assert sample(text, "palui_outbox_oldest_seconds") == 90
    metrics.outbox_waits(7, 0, None)
    assert sample(metrics.render().decode(), "palui_outbox_waiting") == 0
