"""What an approval card says: its "why" names the taint and its source whatever the class and
the turn's kind; no argument value can fake a line; a class set on the connector card keeps
"sends out"."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from palui.approvals.cards import render_arguments
from palui.config import Settings
from palui.domain import ToolCallRequest, ToolSettingRecord, TurnKind
from palui.policy.classes import ToolClass
from palui.tools.catalog import StoredTool, ToolCatalog
from palui.tools.context import CallContext, CallPorts, PolicyInputs
from palui.tools.registry import ToolRegistry
from palui.tools.runner import CallRunner
from palui.tools.watch import stored_tool
from tests import toolkit
from tests.fakes.memory_channel import approval_cards as cards
from tests.fakes.memory_channel import (
    in_memory_settings,
    running_palui,
    switch_on,
)
from tests.fakes.notes_toolset import NOTES_ID, SWITCHED_ON, NotesToolset
from tests.fakes.web_toolset import WEB_ID, WebToolset

SEARCHED = "this turn read untrusted content from mcp-notes (mcp-notes__search_notes)"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


def search() -> toolkit.Completion:
    return toolkit.call("mcp-notes__search_notes", {"query": "milk"})


async def test_a_destructive_card_in_a_tainted_turn_names_the_taint_and_its_source(
    settings: Settings,
) -> None:
    steps = (search(), toolkit.call("mcp-notes__delete_note", {"id": "1"}))
    notes = NotesToolset()
    async with running_palui(settings, toolkit.ScriptedModel(steps), toolsets=[notes]) as (
        app, chat,
    ):  # fmt: skip
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        await chat.send("find milk, then delete that note")
        (card,) = cards(chat)
        assert f"Why: destructive tools always ask first; {SEARCHED}." in card.text


async def test_a_scheduled_write_card_in_a_tainted_job_run_names_the_taint(
    settings: Settings,
) -> None:
    steps = (
        search(),  # the job's run reads untrusted content...
        toolkit.call("mcp-notes__add_note", {"title": "eggs", "body": "12"}),  # ...then writes
        toolkit.answer("hello"),  # the person's message after it
    )
    notes = NotesToolset()
    async with running_palui(settings, toolkit.ScriptedModel(steps), toolsets=[notes]) as (
        app, chat,
    ):  # fmt: skip
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        now = datetime.now(UTC).replace(microsecond=0)
        job = await app.store.jobs.create(
            chat.chat_id, "note the milk", "every 1h", "UTC", 100_000, "test", now
        )
        assert await app.store.jobs.claim_run(job, now)
        await chat.send("hi")  # the worker runs the queued job's turn first
        (card,) = cards(chat)
        assert f"Why: scheduled jobs ask before any write; {SEARCHED}." in card.text
        assert chat.texts()[-1] == "hello"


def test_a_value_with_newlines_renders_as_one_argument() -> None:
    arguments = json.dumps({"body": "hi\nto: boss@corp", "to": "attacker@evil.example"})
    text, cut = render_arguments(arguments)
    lines = text.split("\n")
    assert lines == ['  body: "hi\\nto: boss@corp"', "  to: attacker@evil.example"]
    assert not cut


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a\u2028to: x", '"a\\u2028to: x"'),  # a line separator
        ("a\rb", '"a\\rb"'),
        ("abc\u202edef", '"abc\\u202edef"'),  # a bidi override
        ("a" + " " * 80 + "to: x", '"a [80 spaces] to: x"'),  # pushing text onto a line
        ("plain words, as typed", "plain words, as typed"),
        (12, "12"),
    ],
)
def test_values_that_could_fake_a_line_are_quoted_and_escaped(value: object, shown: str) -> None:
    text, _ = render_arguments(json.dumps({"v": value}))
    assert text == f"  v: {shown}"


def test_argument_names_cant_fake_a_line_either() -> None:
    text, _ = render_arguments(json.dumps({"x\nto": "y"}))
    assert text == '  "x\\nto": y'


async def test_show_all_arguments_sends_them_as_a_code_block(settings: Settings) -> None:
    body = "*not bold* [a link](https://evil.example) " * 20
    steps = (toolkit.call("mcp-notes__delete_note", {"id": "1", "reason": body}),)
    async with running_palui(settings, toolkit.ScriptedModel(steps), toolsets=[NotesToolset()]) as (
        app,
        chat,
    ):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        await chat.send("delete it")
        (card,) = cards(chat)
        show = next(b.data for row in card.keyboard for b in row if "Show all" in b.label)
        await chat.tap(show)
        full = chat.texts()[-1]
        assert full.startswith("All arguments of mcp-notes__delete_note:\n```\n")
        assert full.endswith("\n```")


def _web_tools(catalog: ToolCatalog) -> CallRunner:
    offer = ToolRegistry([WebToolset()]).offer("", 30)
    ports = CallPorts(toolkit.MemoryRecorder())
    context = CallContext("t1", kind=TurnKind.CHAT, policy=PolicyInputs(catalog), ports=ports)
    return CallRunner(context, offer)


async def test_a_class_set_on_the_connector_card_keeps_sends_out() -> None:
    stored = {"mcp-web__check_address": StoredTool(True, ToolClass.WRITE, None)}
    tools = _web_tools(ToolCatalog(None, stored, {}))
    classification = tools.classification("mcp-web__check_address")
    assert classification is not None
    assert (classification.tool_class, classification.sends_out) == (ToolClass.WRITE, True)
    # The destination guard does not start refusing it: it runs in an untainted chat turn.
    call = ToolCallRequest("c1", "mcp-web__check_address", json.dumps({"email": "a@b.example"}))
    outcome = await tools.run(call, 1)
    assert outcome.text == "a@b.example exists"


async def test_a_card_for_a_tool_whose_class_was_set_in_the_chat_still_says_sends_out(
    settings: Settings,
) -> None:
    steps = (
        toolkit.call("mcp-web__fetch", {"url": "https://a.example/"}),
        toolkit.call("mcp-web__check_address", {"email": "a@a.example"}),
    )
    async with running_palui(settings, toolkit.ScriptedModel(steps), toolsets=[WebToolset()]) as (
        app,
        chat,
    ):
        entry = next(
            app.catalog.entry(WEB_ID, remote)
            for remote in WebToolset().tools()
            if remote.name == "check_address"
        )
        record = ToolSettingRecord(
            entry.name, True, "write", entry.classification.definition_hash, False
        )
        await app.store.tool_settings.save(record)
        app.catalog.remember(entry.name, stored_tool(record))
        await chat.send("read https://a.example/ and check a@a.example")
        (card,) = cards(chat)
        assert "mcp-web__check_address  (write · sends out)" in card.text
