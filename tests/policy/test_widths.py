"""Permission widths: `[mcp.<name>] allow`, or the person's choice on /connectors and the web
console, moves what of a connector runs without a card in a clean chat turn, and nothing else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from palui.config import Settings
from palui.domain import Taint, ToolCallRequest, TurnKind
from palui.policy.matrix import Decision, Width, decide, decide_call
from palui.tools.catalog import ToolCatalog
from palui.tools.context import CallContext, CallPorts, PolicyInputs
from palui.tools.registry import ToolRegistry
from palui.tools.runner import CallRunner
from tests import toolkit
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.memory_channel import (
    approval_cards,
    button,
    in_memory_settings,
    running_palui,
    switch_on,
)
from tests.fakes.model_server import Script
from tests.fakes.web_console import signed_in


async def _text(**_: object) -> str:
    return "done"


def notes() -> toolkit.FunctionToolset:
    return toolkit.FunctionToolset(
        "fn",
        {"find_notes": _text, "add_note": _text, "delete_note": _text},
        read_only=["find_notes"],
        destructive=["delete_note"],
        trust="untrusted",  # its results taint the turn
    )


def fn_card(chat) -> str:
    return next(s.card.text for s in reversed(chat.sent_cards) if s.card.text.startswith("fn "))


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


def test_a_width_moves_only_the_clean_chat_column() -> None:
    for width in Width:
        for tool_class in ("read", "write", "destructive"):
            # Tainted chat turns, scheduled jobs and webhook summaries: as without widths.
            assert decide(tool_class, TurnKind.CHAT, True, width) == decide(
                tool_class, TurnKind.CHAT, True
            )
            for kind in (TurnKind.SCHEDULED, TurnKind.WEBHOOK):
                for tainted in (False, True):
                    assert decide(tool_class, kind, tainted, width) == decide(
                        tool_class, kind, tainted
                    )
    clean = {
        width: [decide(c, TurnKind.CHAT, False, width) for c in ("read", "write", "destructive")]
        for width in Width
    }
    assert clean[Width.READS] == [Decision.RUN, Decision.ASK, Decision.ASK]
    assert clean[Width.WRITES] == [Decision.RUN, Decision.RUN, Decision.ASK]
    assert clean[Width.ALL] == [Decision.RUN, Decision.RUN, Decision.RUN]
    # A width nobody can read loosens nothing.
    assert decide("write", TurnKind.CHAT, False, "everything") is Decision.ASK
    # The destination check of a tainted turn still applies on top.
    assert decide_call("destructive", TurnKind.CHAT, True, width=Width.ALL) is Decision.ASK


@pytest.fixture
def notes_reads_only(with_notes: Path) -> Path:
    config = Path(os.environ["PALUI_CONFIG"])
    config.write_text(config.read_text() + 'allow = "reads"\n')
    return with_notes


async def test_allow_reads_in_palui_toml_makes_a_clean_turn_write_ask(
    notes_reads_only, start_palui, fake_telegram, fake_model, mcp_in_process
) -> None:
    with_notes = notes_reads_only
    steps = [
        Script(tool_calls=[("mcp-notes__add_note", json.dumps({"title": "a", "body": "b"}))]),
        Script(text="asked first"),
    ]
    fake_model.brain = lambda request: steps.pop(0)
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add a note")
    card = await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: "Approval needed" in str(p.get("text"))
    )
    assert "mcp-notes__add_note  (write)" in card.params["text"]
    assert 'width is "reads"' in card.params["text"]
    assert len(json.loads(with_notes.read_text())) == 1  # nothing ran without the tap
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/connectors")
    sheet = await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: str(p.get("text")).startswith("notes ")
    )
    assert "reads only; every write asks (allow = reads, from: palui.toml)" in sheet.params["text"]


async def test_allow_all_chosen_on_the_sheet_runs_destructive_calls_only_in_clean_turns(
    settings,
) -> None:
    toolset = notes()
    model = toolkit.ScriptedModel(
        [
            toolkit.call("fn__delete_note", {}),
            toolkit.answer("deleted"),
            toolkit.call("fn__find_notes", {}),
            toolkit.call("fn__delete_note", {}, call_id="c2"),
        ],
        forever=toolkit.answer("ok"),
    )
    async with running_palui(settings, model, toolsets=[toolset]) as (app, chat):
        await switch_on(app, "fn", "delete_note", "add_note")
        await chat.command("connectors")
        assert "(allow = writes, from: default)" in fn_card(chat)
        sheet = next(s for s in reversed(chat.sent_cards) if s.card.text.startswith("fn "))
        await chat.tap(button(sheet.card, "Width: writes…"))
        chooser = chat.edits[-1][2]
        pick = button(chooser, "all: everything, destructive calls too")
        await chat.tap(pick, message_id=sheet.message_id)
        assert "(allow = all, from: you)" in chat.edits[-1][2].text
        assert (await app.store.tool_settings.widths()) == {"fn": "all"}

        await chat.send("delete it")
        assert toolset.calls == [("delete_note", {})]  # no card in a clean chat turn
        assert not approval_cards(chat)

        await chat.send("look, then delete")  # the read taints the turn: the card is back
        assert [c[0] for c in toolset.calls] == ["delete_note", "find_notes"]
        assert "fn__delete_note  (destructive)" in approval_cards(chat)[-1].text


async def test_a_width_never_lets_a_job_run_a_destructive_call() -> None:
    toolset = notes()
    offer = ToolRegistry([toolset]).offer("", 30)
    catalog = ToolCatalog(None, {}, {}, widths={"fn": Width.ALL})
    policy, ports = PolicyInputs(catalog), CallPorts(toolkit.MemoryRecorder())
    job = CallRunner(CallContext("t", kind=TurnKind.SCHEDULED, policy=policy, ports=ports), offer)
    outcome = await job.run(ToolCallRequest("c", "fn__delete_note", "{}"), 1)
    assert outcome.is_error and "not available" in outcome.text
    taint = Taint("fn", "fn__find_notes")
    tainted = CallRunner(CallContext("t", taint=taint, policy=policy, ports=ports), offer)
    assert tainted.needs_approval(ToolCallRequest("c", "fn__delete_note", "{}"))
    assert toolset.calls == []


async def test_a_width_set_on_the_web_or_by_another_process_holds_from_the_next_turn(
    settings,
) -> None:
    toolset = notes()
    model = toolkit.ScriptedModel(
        [toolkit.call("fn__add_note", {}), toolkit.call("fn__add_note", {}, call_id="c2")],
        forever=toolkit.answer("ok"),
    )
    async with (
        running_palui(settings, model, toolsets=[toolset]) as (app, chat),
        signed_in(app, chat) as web,
    ):
        await switch_on(app, "fn", "add_note")
        await web.get("/ui/connectors")
        version = await app.store.tool_settings.version()
        answer = await web.post("/ui/connectors/fn/width", {"allow": "reads"})
        assert answer.status == 303 and "done=width" in answer.headers["Location"]
        assert await app.store.tool_settings.version() == version + 1
        assert (await web.post("/ui/connectors/fn/width", {"allow": "any"})).status == 400
        page = await web.get("/ui/connectors")
        assert '<option value="reads" selected>' in page and "(from: you)" in page

        await chat.send("add a note")
        assert toolset.calls == [] and "fn__add_note  (write)" in approval_cards(chat)[-1].text

        # Another process sets it back (the database, the settings version): this one follows.
        await app.store.tool_settings.set_width("fn", "writes")
        await chat.send("add another")
        assert toolset.calls == [("add_note", {})]
        await chat.command("connectors")
        assert "(allow = writes, from: you)" in fn_card(chat)
