"""Forms: a tool marked `form = true` (palui.toml's `[mcp.<name>.tools.<tool>]`, or the kinds
file's `form`) has every call open ✏️ Edit's questions, the model's values prefilled, before it
can run, whatever its class: a card first, so every rule of cards holds, and a restart keeps
the open form."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from palui.config import Settings
from palui.config.sections import McpServerSettings
from palui.domain import RemoteTool
from palui.policy.kinds_file import parse_kinds_file
from tests import toolkit
from tests.fakes.memory_channel import (
    MemoryChannel,
    approval_cards,
    approve,
    in_memory_settings,
    running_palui,
    switch_on,
)


async def _found(query: str = "", **_: object) -> str:
    return f"found {query}"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    kinds = tmp_path / "tool_kinds.yaml"
    kinds.write_text("tools:\n  fn__find_notes:\n    kind: read\n    form: true\n")
    return in_memory_settings(database_url, str(tmp_path / "data"), kinds_file=kinds)


def notes() -> toolkit.FunctionToolset:
    return toolkit.FunctionToolset("fn", {"find_notes": _found}, read_only=["find_notes"])


async def test_a_form_tool_opens_its_questions_prefilled_and_the_form_survives_a_restart(
    settings,
) -> None:
    toolset = notes()
    model = toolkit.ScriptedModel(
        [toolkit.call("fn__find_notes", {"query": "milk"})], forever=toolkit.answer("ok")
    )
    async with running_palui(settings, model, toolsets=[toolset]) as (_app, chat):
        await chat.send("find milk")
        cards = [c.text for c in chat.cards]
        assert any("Approval needed — fn__find_notes  (read)" in text for text in cards)
        assert any("reviews every call of this tool in a form" in text for text in cards)
        question = chat.cards[-1].text
        assert "query" in question and "milk" in question  # prefilled with the model's value
        assert toolset.calls == []  # a read, and still nothing ran

    later = MemoryChannel(_ids=itertools.count(100))  # Telegram's update ids keep growing
    async with running_palui(settings, model, later, toolsets=[toolset]) as (_app, chat):
        await chat.send("eggs")  # the answer, after a restart
        edited = approval_cards(chat)[-1]
        assert '"eggs"' in edited.text or "eggs" in edited.text
        await chat.tap(approve(edited))
        assert toolset.calls == [("find_notes", {"query": "eggs"})]


def test_form_is_read_from_palui_toml_and_the_kinds_file() -> None:
    server = McpServerSettings(command="x", tools={"send": {"form": True}})
    assert server.tools["send"].form
    with pytest.raises(ValueError):
        McpServerSettings(command="x", tools={"send": {"from": True}})
    kinds = parse_kinds_file("tools:\n  mcp-a__b:\n    kind: write\n    form: true\n")
    assert kinds.tools["mcp-a__b"].form
    plain = parse_kinds_file("tools:\n  mcp-a__b:\n    kind: write\n")
    assert plain.digest != kinds.digest


class Mailer(toolkit.FunctionToolset):
    """A write whose schema requires `to` and `text`."""

    def tools(self) -> list[RemoteTool]:
        schema = {
            "type": "object",
            "properties": {"to": {"type": "string"}, "text": {"type": "string"}},
            "required": ["to", "text"],
        }
        return [replace(tool, input_schema=schema) for tool in super().tools()]


async def _sent(to: str, text: str) -> str:
    return f"sent to {to}"


async def test_a_call_missing_a_required_argument_asks_the_person_instead_of_failing(
    database_url: str, tmp_path: Path
) -> None:
    settings = in_memory_settings(database_url, str(tmp_path / "data"))
    toolset = Mailer("fn", {"send_note": _sent})
    model = toolkit.ScriptedModel(
        [toolkit.call("fn__send_note", {"text": "hi"})], forever=toolkit.answer("done")
    )
    async with running_palui(settings, model, toolsets=[toolset]) as (app, chat):
        await switch_on(app, "fn", "send_note")
        await chat.send("send hi")
        assert toolset.calls == []
        held = approval_cards(chat)[-1].text
        assert "fn__send_note  (write" in held and "'to' missing: you fill it in" in held
        assert "to" in chat.cards[-1].text  # the first question: the missing argument
        await chat.send("ana@example.org")
        await chat.send(".")  # keep the model's text
        await chat.tap(approve(approval_cards(chat)[-1]))
        assert toolset.calls == [("send_note", {"to": "ana@example.org", "text": "hi"})]
