"""OpenTelemetry traces (DESIGN §1.13, Operations): with PALUI_OTEL_ENDPOINT set, a span per turn
with children for the model calls, the tool calls (the decision as an event) and the reply's
sends, exported over OTLP/HTTP (to a fake collector here); never an argument's value; the trace
id on the turn's log lines. Unset: nothing is traced."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import structlog
from aiohttp.test_utils import TestClient, TestServer
from structlog.testing import LogCapture

from palui.observe import Tracing
from palui.web.viewer import Viewer
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.cli import palui_main
from tests.fakes.model_server import ModelRequest, Script
from tests.fakes.otlp_collector import FakeCollector, Span
from tests.fakes.web_console import console_with_viewer, web_deps

SECRET_BODY = "the landlord's IBAN DE89370400440532013000"


@pytest.fixture
async def collector(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeCollector]:
    collector = FakeCollector()
    await collector.start()
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # export every 50 ms, not 5 s
    yield collector
    await collector.close()


def one(spans: list[Span], name: str) -> Span:
    [span] = [s for s in spans if s.name == name]
    return span


async def test_a_turn_is_one_trace_with_its_model_tool_and_send_spans(
    collector, with_notes, start_palui, fake_telegram, fake_model, request
) -> None:
    def brain(request: ModelRequest) -> Script:
        if not [m for m in request.messages if m["role"] == "tool"]:
            arguments = json.dumps({"title": "rent", "body": SECRET_BODY})
            return Script(tool_calls=[("mcp-notes__add_note", arguments)])
        return Script(text="Noted.")

    fake_model.brain = brain
    await start_palui(PALUI_OTEL_ENDPOINT=collector.url)
    records = LogCapture()  # every line's fields, with those bound from context
    before = structlog.get_config()
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, records])
    request.addfinalizer(lambda: structlog.configure(**before))
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "note the rent")
    await fake_telegram.wait_for_text(OWNER_CHAT, "Noted.")
    await collector.wait_for(lambda spans: any(s.name == "palui.turn" for s in spans))

    turn = one(collector.spans, "palui.turn")
    assert turn.parent_id == "" and turn.attributes["palui.turn.kind"] == "chat"
    ours = [s for s in collector.spans if s.trace_id == turn.trace_id]
    models = [s for s in ours if s.name == "palui.model"]
    assert len(models) == 2 and all(m.parent_id == turn.span_id for m in models)
    assert all(m.attributes["gen_ai.usage.input_tokens"] > 0 for m in models)
    tool = one(ours, "palui.tool")
    assert tool.parent_id == turn.span_id
    assert tool.attributes["palui.tool"] == "mcp-notes__add_note"
    [(_, decision)] = [e for e in tool.events if e[0] == "palui.decision"]
    assert decision["tool_class"] == "write" and decision["decision"] == "run"
    sends = [s for s in ours if s.name == "palui.send"]
    assert sends and all(s.parent_id == turn.span_id for s in sends)
    everything = json.dumps([vars(s) for s in collector.spans])
    assert "IBAN" not in everything and "note the rent" not in everything

    done = [line for line in records.entries if line.get("event") == "turn_done"]
    assert [line.get("trace_id") for line in done] == [turn.trace_id]


async def turn_page(store, turn_id: str) -> str:
    """The web console's page of the turn, as the chat's owner sees it."""
    deps = web_deps(store, allowed_users=frozenset({OWNER_ID}))
    console = console_with_viewer(deps, Viewer(OWNER_ID, frozenset({OWNER_CHAT}), "csrf"))
    async with TestClient(TestServer(console)) as client:
        answer = await client.get(f"/ui/turns/{turn_id}")
        assert answer.status == 200
        return await answer.text()


async def test_the_turn_page_and_runs_show_name_the_trace_its_log_lines_carry(
    collector, start_palui, fake_telegram, fake_model, request
) -> None:
    fake_model.reply("Hello.")
    palui = await start_palui(PALUI_OTEL_ENDPOINT=collector.url)
    records = LogCapture()
    before = structlog.get_config()
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, records])
    request.addfinalizer(lambda: structlog.configure(**before))
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    await fake_telegram.wait_for_text(OWNER_CHAT, "Hello.")
    await collector.wait_for(lambda spans: any(s.name == "palui.turn" for s in spans))
    trace_id = one(collector.spans, "palui.turn").trace_id

    [turn] = await palui.app.store.turn_listing.listing({OWNER_CHAT})
    assert f"trace {trace_id}" in await turn_page(palui.app.store, turn.turn_id)
    lines = [line for line in records.entries if line.get("turn_id") == turn.turn_id]
    assert {line["event"] for line in lines} >= {"turn_started", "turn_done"}
    assert {line.get("trace_id") for line in lines} == {trace_id}

    code, out, _ = await palui_main("runs", "show", turn.turn_id)
    assert code == 0 and f"  trace {trace_id}\n" in out
    code, out, _ = await palui_main("runs", "show", turn.turn_id, "--json")
    assert json.loads(out)["trace_id"] == trace_id


async def test_untraced_turns_show_no_trace(start_palui, fake_telegram, fake_model) -> None:
    fake_model.reply("Hello.")
    palui = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    await fake_telegram.wait_for_text(OWNER_CHAT, "Hello.")
    [turn] = await palui.app.store.turn_listing.listing({OWNER_CHAT})
    assert "trace " not in await turn_page(palui.app.store, turn.turn_id)  # as its log lines


def test_without_an_endpoint_nothing_is_traced() -> None:
    tracing = Tracing.to(None)
    assert not tracing.on
    with tracing.span("palui.tool") as span:
        assert span is None  # the shared no-op: nothing built
