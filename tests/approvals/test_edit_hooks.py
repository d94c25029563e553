"""✏️ Edit goes through the operator's pre hooks: a value a hook blocks when the model sends it is
refused when a person types it, and a hook's rewrite is what the edited card shows and runs.
In this process (the notes tools as Python functions, a scripted model); the hooks below are
named by dotted path in the settings, as palui.toml names them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from palui.domain import Card
from palui.tools.hooks import Block, Rewrite, ToolCall
from tests import toolkit
from tests.fakes.memory_channel import (
    MemoryChannel,
    approval_cards,
    in_memory_settings,
    running_palui,
    switch_on,
)
from tests.fakes.notes_toolset import NOTES_ID, SWITCHED_ON, NotesToolset

SECRETS = "notes may not mention secrets"


def block_secrets(call: ToolCall) -> Block | None:
    if call.tool.endswith("__add_note") and "secret" in json.dumps(call.arguments).lower():
        return Block(SECRETS)
    return None


def explode_on_zero(call: ToolCall) -> None:
    if call.arguments.get("body") == "0":
        raise RuntimeError("the notes quota service is down")


def tag_titles(call: ToolCall) -> Rewrite | None:
    title = str(call.arguments.get("title", ""))
    if call.tool.endswith("__add_note") and not title.startswith("[bot] "):
        return Rewrite({**call.arguments, "title": f"[bot] {title}"})
    return None


@asynccontextmanager
async def edit_palui(
    database_url: str, tmp_path: Path, hook: str, *steps: toolkit.Step
) -> AsyncIterator[tuple[Any, MemoryChannel, toolkit.ScriptedModel, NotesToolset]]:
    settings = in_memory_settings(
        database_url,
        str(tmp_path / "data"),
        hooks={"pre": [f"tests.approvals.test_edit_hooks:{hook}"]},
    )
    notes, model = NotesToolset(), toolkit.ScriptedModel(steps)
    async with running_palui(settings, model, toolsets=[notes]) as (app, chat):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        yield app, chat, model, notes


def tainted_add_note(title: str, body: str) -> tuple[toolkit.Step, ...]:
    """A search (untrusted: the turn is tainted) then a write, which therefore needs a card."""
    return (
        toolkit.call("mcp-notes__search_notes", {"query": "milk"}, call_id="s1"),
        toolkit.call("mcp-notes__add_note", {"title": title, "body": body}, call_id="a1"),
        toolkit.answer("Added your note."),
    )


def labelled(card: Card) -> dict[str, str]:
    return {b.label: b.data for row in card.keyboard for b in row}


def questions(chat: MemoryChannel) -> list[Card]:
    return [card for card in chat.cards if "✏️ Editing" in card.text]


async def test_a_typed_value_a_hook_blocks_is_refused_with_its_reason_and_asked_again(
    database_url: str, tmp_path: Path
) -> None:
    steps = tainted_add_note("eggs", "12")
    async with edit_palui(database_url, tmp_path, "block_secrets", *steps) as (
        app, chat, model, notes,
    ):  # fmt: skip
        await chat.send("add eggs")
        (card,) = approval_cards(chat)
        await chat.tap(labelled(card)["✏️ Edit"])
        assert "1 of 2" in questions(chat)[-1].text

        # The notes tools declare no schema: the questions follow the arguments' order.
        await chat.send("the secret plan")  # the body: not the last question
        asked = questions(chat)[-1]
        assert f"⚠️ Not allowed: the operator's rules block it: {SECRETS}" in asked.text
        assert "1 of 2" in asked.text and "Now: 12" in asked.text
        await chat.send("a dozen")
        assert "2 of 2" in questions(chat)[-1].text

        await chat.send("top secret")  # the title: the last answer, checked with the whole call
        asked = questions(chat)[-1]
        assert f"⚠️ Not allowed: the operator's rules block it: {SECRETS}" in asked.text
        assert "2 of 2" in asked.text and "Now: eggs" in asked.text
        assert len(approval_cards(chat)) == 1  # no edited card was shown
        assert notes.ran("add_note") == 0 and len(model.calls) == 2  # nothing ran, no turn

        await chat.send("bacon")
        edited = approval_cards(chat)[-1]
        assert len(approval_cards(chat)) == 2 and "Edited by" in edited.text
        await chat.tap(labelled(edited)["✅ Approve"])
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts()[-1] == "Added your note."
        assert notes.notes["2"] == {"title": "bacon", "body": "a dozen"}
        assert notes.ran("add_note") == 1


async def test_keeping_a_blocked_value_is_refused_too(database_url: str, tmp_path: Path) -> None:
    steps = tainted_add_note("eggs", "12")
    async with edit_palui(database_url, tmp_path, "block_secrets", *steps) as (
        _app, chat, _model, notes,
    ):  # fmt: skip
        await chat.send("add eggs")
        await chat.tap(labelled(approval_cards(chat)[0])["✏️ Edit"])
        await chat.send("secret")
        await chat.send("secrets")
        asked = questions(chat)[-1]
        assert SECRETS in asked.text and "1 of 2" in asked.text
        await chat.tap(labelled(asked)["⏭ Keep the rest"])  # all stays as the card shows it
        assert "Nothing was changed" in chat.cards[-1].text
        assert len(approval_cards(chat)) == 1 and notes.ran("add_note") == 0


async def test_a_hooks_rewrite_is_what_the_edited_card_shows_and_what_runs(
    database_url: str, tmp_path: Path
) -> None:
    steps = tainted_add_note("eggs", "12")
    async with edit_palui(database_url, tmp_path, "tag_titles", *steps) as (
        app, chat, _model, notes,
    ):  # fmt: skip
        await chat.send("add eggs")
        (card,) = approval_cards(chat)
        assert "[bot] eggs" in card.text  # the model's call went through the hook
        await chat.tap(labelled(card)["✏️ Edit"])
        await chat.send(".")  # the body
        await chat.send("bacon")  # the title

        edited = approval_cards(chat)[-1]
        assert "[bot] bacon" in edited.text and "Edited by" in edited.text
        await chat.tap(labelled(edited)["✅ Approve"])
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts()[-1] == "Added your note."
        assert notes.notes["2"] == {"title": "[bot] bacon", "body": "12"}
        assert notes.ran("add_note") == 1


async def test_a_hook_that_fails_on_the_edited_value_refuses_it(
    database_url: str, tmp_path: Path
) -> None:
    steps = tainted_add_note("eggs", "12")
    async with edit_palui(database_url, tmp_path, "explode_on_zero", *steps) as (
        _app, chat, _model, notes,
    ):  # fmt: skip
        await chat.send("add eggs")
        await chat.tap(labelled(approval_cards(chat)[0])["✏️ Edit"])
        await chat.send("0")
        asked = questions(chat)[-1]
        assert "⚠️ Not allowed: a safety check failed" in asked.text
        assert "the notes quota service is down" in asked.text and "1 of 2" in asked.text
        assert len(approval_cards(chat)) == 1 and notes.ran("add_note") == 0
