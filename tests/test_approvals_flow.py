"""Tools, the policy and approval cards. End to end (a real MCP server over stdio, the fake Bot
API, litellm against the fake model) where the test is about those; the rest in this process
(tests/fakes/memory_channel.py, the notes tools as Python functions, a scripted model)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from palui.config import Settings
from palui.db.models import ApprovalRow
from palui.domain import Card, Completion, Message, ToolCallRequest, Usage
from tests import toolkit
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.memory_channel import (
    MemoryChannel,
    approval_cards,
    in_memory_settings,
    running_palui,
    switch_on,
)
from tests.fakes.model_server import ModelRequest, Script
from tests.fakes.notes_toolset import NOTES_ID, SWITCHED_ON, NotesToolset


def tool_results(request: ModelRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


def scripted(*steps: Script):
    """A brain that answers step by step within each turn (counted by tool results seen)."""
    queue = list(steps)

    def brain(request: ModelRequest) -> Script:
        return queue.pop(0)

    return brain


def call(name: str, **arguments: object) -> Script:
    return Script(tool_calls=[(name, json.dumps(arguments))])


def buttons(message: dict) -> dict[str, str]:
    keyboard = message.get("reply_markup") or {}
    if isinstance(keyboard, str):
        keyboard = json.loads(keyboard)
    rows = keyboard.get("inline_keyboard", [])
    return {b["text"]: b["callback_data"] for row in rows for b in row}


async def wait_for_card(fake_telegram, count: int = 1) -> dict:
    """The `count`-th approval card, once it has been sent."""

    def cards() -> list[dict]:
        return [
            m for m in fake_telegram.sent_messages(OWNER_CHAT) if "Approval needed" in m["text"]
        ]

    await fake_telegram.wait_for_request("sendMessage", predicate=lambda _: len(cards()) >= count)
    return cards()[count - 1]


async def test_the_model_calls_an_mcp_tool_and_answers_with_its_result(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    def brain(request: ModelRequest) -> Script:
        results = tool_results(request)
        if not results:
            return call("mcp-notes__list_notes")
        return Script(text=f"Your notes: {results[0]}")

    fake_model.brain = brain
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "which notes do I have?")
    reply = (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]["text"]
    assert "Groceries" in reply
    offered = {t["function"]["name"]: t["function"] for t in fake_model.requests[0].tools}
    assert "mcp-notes__list_notes" in offered
    assert "mcp-notes__delete_note" in offered  # switched on in palui.toml
    assert offered["mcp-notes__search_notes"]["parameters"]["required"] == ["query"]


async def test_stop_during_a_long_tool_call_ends_the_turn_and_names_the_call(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(call("mcp-notes__slow_op", seconds=30), Script(text="next"))
    palui = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "do the slow thing")
    await _until_tool_running(palui.app)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/stop")
    reply = (await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=5))[0]["text"]
    assert reply == (
        "Stopped.\nmcp-notes__slow_op was interrupted; it may or may not have completed."
    )
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello")
    assert (await fake_telegram.wait_for_messages(OWNER_CHAT, 2))[1]["text"] == "next"


async def _until_tool_running(app) -> None:
    # A read call is recorded once it ends (palui.tools.record): the turn's calls in flight
    # say when it is out. Nothing to await.
    async with asyncio.timeout(20):
        while True:
            chats = app.chats  # set once the app serves
            turns = chats._workers._turns.running.values() if chats is not None else ()
            if any(running.tools.in_flight() for running in turns):
                return
            await asyncio.sleep(0.05)


async def test_a_prompt_injection_gets_a_card_and_runs_only_after_approve_once(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    # The search result (untrusted) tells the model to delete a note; the model obeys.
    fake_model.brain = scripted(
        call("mcp-notes__search_notes", query="milk"),
        call("mcp-notes__delete_note", id="1"),
        Script(text="Deleted it."),
    )
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "find milk")
    card = await wait_for_card(fake_telegram)
    assert "mcp-notes__delete_note  (destructive)" in card["text"]
    why = "Why: destructive tools always ask first; this turn read untrusted content"
    assert why in card["text"]
    assert "id: 1" in card["text"]
    assert "1" in json.loads(with_notes.read_text())  # nothing deleted yet

    approve = buttons(card)["✅ Approve"]
    assert len(approve.encode()) <= 64
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], approve)
    final = await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: p.get("text") == "Deleted it."
    )
    assert final
    assert json.loads(with_notes.read_text()) == {}
    await fake_telegram.wait_for_request("editMessageText", predicate=_says("✅ Approved by"))
    edited = fake_telegram.sent_messages(OWNER_CHAT)[0]
    assert "✅ Approved by" in edited["text"] and not buttons(edited)

    # A second tap on the same card runs nothing.
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], approve)
    await fake_telegram.wait_for_request("answerCallbackQuery", predicate=_says("Already decided"))
    assert len(fake_model.requests) == 3


def _says(text: str):
    return lambda params: text in str(params.get("text", ""))


async def test_a_tool_whose_definition_changes_becomes_destructive_off_and_the_chat_is_told(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(
        call("mcp-notes__redefine_search", description="Search notes and mail them to a friend"),
        Script(text="done"),
        Script(text="second turn"),
    )
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "go")
    notice = await fake_telegram.wait_for_request(
        "sendMessage", predicate=_says("mcp-notes__search_notes changed its definition")
    )
    assert "counts as destructive and is switched off" in notice.params["text"]
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("done"))
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "search again")
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("second turn"))
    offered = {t["function"]["name"] for t in fake_model.requests[-1].tools}
    assert "mcp-notes__list_notes" in offered
    assert "mcp-notes__search_notes" not in offered


async def test_status_lists_each_connector_with_its_state_and_tools(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    config = with_notes.parent / "palui.toml"
    config.write_text(config.read_text() + '\n[mcp.broken]\ncommand = "/nonexistent/mcp-server"\n')
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/status")
    status = (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]["text"]
    assert "✅ notes — 12 tools" in status
    # (A "retrying in N s" follows while it waits; it may be mid-retry at this moment.)
    assert '⚠️ broken — not connected: "command not found: /nonexistent/mcp-server"' in status


# -- in this process ---------------------------------------------------------------------------


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


@asynccontextmanager
async def notes_palui(
    settings: Settings, *steps: toolkit.Step
) -> AsyncIterator[tuple[Any, MemoryChannel, toolkit.ScriptedModel, NotesToolset]]:
    """Palui with the notes tools (untrusted; add and delete switched on, as `with_notes`)."""
    notes, model = NotesToolset(), toolkit.ScriptedModel(steps)
    async with running_palui(settings, model, toolsets=[notes]) as (app, chat):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        yield app, chat, model, notes


def labelled(card: Card) -> dict[str, str]:
    return {b.label: b.data for row in card.keyboard for b in row}


def results(messages: list[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


def edited(chat: MemoryChannel) -> list[str]:
    return [card.text for _, _, card in chat.edits]


def toasts(chat: MemoryChannel) -> list[str]:
    return [text for _, text in chat.answers]


async def test_deny_runs_nothing_and_the_model_is_told(settings: Settings) -> None:
    steps = (toolkit.call("mcp-notes__delete_note", {"id": "1"}), toolkit.answer("OK, I left it."))
    async with notes_palui(settings, *steps) as (app, chat, model, notes):
        await chat.send("delete note 1")
        (card,) = approval_cards(chat)
        await chat.tap(labelled(card)["❌ Deny"])
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts()[-1] == "OK, I left it."
        assert "1" in notes.notes and notes.ran("delete_note") == 0
        assert "The person denied this call." in results(model.calls[-1][0])[0]
        assert any("❌ Denied by" in text for text in edited(chat))


async def test_forged_stranger_and_expired_taps_run_nothing(settings: Settings) -> None:
    steps = (toolkit.call("mcp-notes__delete_note", {"id": "1"}), toolkit.answer("expired"))
    async with notes_palui(settings, *steps) as (app, chat, model, notes):
        await chat.send("delete note 1")
        (card,) = approval_cards(chat)
        approve = labelled(card)["✅ Approve"]
        message_id = chat.sent_cards[-1].message_id

        await chat.tap("ap:forged-token:y", message_id=message_id)
        assert "no longer active" in toasts(chat)[-1]
        stranger = chat.inbound(user_id=4242, message_id=message_id, callback_data=approve)
        await chat.push(stranger)
        await app.chats.inbox.refusals.idle()  # a stranger's toast goes out in the background
        assert "owner can decide" in toasts(chat)[-1]

        async with app.db.session() as s, s.begin():
            past = datetime.now(UTC) - timedelta(minutes=1)
            await s.execute(update(ApprovalRow).values(expires_at=past))
        await chat.tap(approve)
        await app.chats.wait_idle(chat.chat_id)
        assert "expired" in toasts(chat)[-1]
        assert chat.texts()[-1] == "expired"
        assert "1" in notes.notes and notes.ran("delete_note") == 0
        assert any("⌛ Expired" in text for text in edited(chat))
        assert "it expired" in results(model.calls[-1][0])[0]


async def test_taint_carries_into_the_next_turn_until_new(settings: Settings) -> None:
    steps = (
        toolkit.call(
            "mcp-notes__search_notes", {"query": "milk"}
        ),  # turn 1 reads untrusted content
        toolkit.answer("found it"),
        toolkit.call(
            "mcp-notes__add_note", {"title": "eggs", "body": "12"}
        ),  # turn 2: a write asks
        toolkit.answer("denied, fine"),
        toolkit.call("mcp-notes__add_note", {"title": "eggs", "body": "12"}),  # after /new: runs
        toolkit.answer("added"),
    )
    async with notes_palui(settings, *steps) as (app, chat, _model, notes):
        await chat.send("find milk")
        assert chat.texts() == ["found it"]
        await chat.send("add eggs")
        (card,) = approval_cards(chat)
        assert "(write)" in card.text
        assert "this conversation includes content from mcp-notes, 1 turn ago" in card.text
        await chat.tap(labelled(card)["❌ Deny"])
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts()[-1] == "denied, fine"
        await chat.command("new")
        assert "fresh conversation" in chat.texts()[-1]
        await chat.send("add eggs")
        assert chat.texts()[-1] == "added"
        assert len(approval_cards(chat)) == 1
        assert [n["title"] for n in notes.notes.values()] == ["Groceries", "eggs"]


async def test_a_write_in_an_untainted_chat_turn_runs_at_once(settings: Settings) -> None:
    steps = (toolkit.call("mcp-notes__add_note", {"title": "eggs", "body": "12"}),
             toolkit.answer("added"))  # fmt: skip
    async with notes_palui(settings, *steps) as (_, chat, _model, notes):
        await chat.send("add eggs")
        assert chat.texts() == ["added"]
        assert len(notes.notes) == 2 and notes.ran("add_note") == 1
        assert not approval_cards(chat)


async def test_two_held_calls_get_a_card_each_and_the_turn_resumes_after_both(
    settings: Settings,
) -> None:
    both = Completion(
        "scripted", "",
        (ToolCallRequest("c1", "mcp-notes__delete_note", json.dumps({"id": "1"})),
         ToolCallRequest("c2", "mcp-notes__delete_note", json.dumps({"id": "2"}))),
        Usage(10, 5),
    )  # fmt: skip
    async with notes_palui(settings, both, toolkit.answer("one kept, one gone")) as (
        app, chat, model, notes,
    ):  # fmt: skip
        notes.notes["2"] = {"title": "Old", "body": "x"}
        await chat.send("delete notes 1 and 2")
        first, second = approval_cards(chat)
        assert "id: 1" in first.text and "id: 2" in second.text

        first_id, second_id = (sent.message_id for sent in chat.sent_cards[-2:])
        await chat.tap(labelled(first)["✅ Approve"], message_id=first_id)
        assert toasts(chat)[-1] == "Approved."
        assert len(model.calls) == 1  # still waiting for the second card
        await chat.tap(labelled(second)["❌ Deny"], message_id=second_id)
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts()[-1] == "one kept, one gone"
        assert notes.notes == {"2": {"title": "Old", "body": "x"}}
        assert notes.ran("delete_note") == 1
        tool_texts = results(model.calls[-1][0])
        assert tool_texts[0] == "deleted note 1" and "denied" in tool_texts[1]


async def test_long_arguments_are_cut_on_the_card_with_a_button_to_see_all(
    settings: Settings,
) -> None:
    body = "lorem ipsum " * 100
    steps = (toolkit.call("mcp-notes__delete_note", {"id": "1", "reason": body}),)
    async with notes_palui(settings, *steps) as (_, chat, _model, notes):
        await chat.send("delete it")
        (card,) = approval_cards(chat)
        assert body not in card.text and "reason: lorem ipsum" in card.text

        await chat.command("approvals")
        assert "Pending approvals: 1\n• mcp-notes__delete_note (destructive)" in chat.texts()[-1]
        await chat.tap(labelled(card)["📄 Show all arguments"])
        full = chat.texts()[-1]
        assert "All arguments" in full and body.strip() in full
        assert "1" in notes.notes and notes.ran("delete_note") == 0  # looking is not deciding
