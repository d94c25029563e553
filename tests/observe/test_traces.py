"""OpenTelemetry traces (DESIGN §1.13, Operations): with PALUI_OTEL_ENDPOINT set, a span per turn
with children for the model calls, the tool calls (the decision as an event) and the reply's
sends, exported over OTLP/HTTP (to a fake collector here); never an argument's value; the trace
id on the turn's log lines. Unset: nothing is traced."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import structlog
from structlog.testing import LogCapture

from palui.observe import Tracing
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.fakes.otlp_collector import FakeCollector, Span

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


def test_without_an_endpoint_nothing_is_traced() -> None:
    tracing = Tracing.to(None)
    assert not tracing.on
    with tracing.span("palui.tool") as span:
        assert span is None  # the shared no-op: nothing built
