"""/connectors: one card per connector; switches, "enable all read tools", pause, classes."""

from __future__ import annotations

import json

import pytest

from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script
from tests.toolkit import tap

# The notes server runs in this process (the same server and MCP session, no stdio process):
# these tests are about the sheet, not the transport.
pytestmark = pytest.mark.usefixtures("mcp_in_process")


async def test_the_sheet_shows_classes_and_switches_and_toggles_in_place(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.reply("ok")
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/connectors")
    card = (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]
    assert card["text"].startswith("notes  ·  ✅ on  ·  untrusted")
    assert "destructive delete_note  [on]  (class from: annotation)" in card["text"]
    assert "write       add_tool_later  [off]" in card["text"]  # new and not read: off

    card = await tap(fake_telegram, card, "⬜ add_tool_later", "add_tool_later is on")
    assert "add_tool_later  [on]" in card["text"]
    card = await tap(fake_telegram, card, "✅ list_notes", "list_notes is off")

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    await fake_telegram.wait_for_request("sendMessage", predicate=lambda p: p.get("text") == "ok")
    offered = {t["function"]["name"] for t in fake_model.requests[-1].tools}
    assert "mcp-notes__add_tool_later" in offered and "mcp-notes__list_notes" not in offered

    card = await tap(fake_telegram, card, "Enable all read tools", "Switched on 1 read tools")
    assert "list_notes  [on]" in card["text"]


async def test_pausing_a_connector_removes_its_tools_from_the_next_turn(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.reply("ok")
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/connectors")
    card = (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]
    card = await tap(fake_telegram, card, "⏸ Pause", "mcp-notes paused")
    assert "⏸ paused" in card["text"]
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/status")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: "⏸ notes — paused" in str(p.get("text"))
    )
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    await fake_telegram.wait_for_request("sendMessage", predicate=lambda p: p.get("text") == "ok")
    assert not [n for n in fake_model.requests[-1].tool_names if n.startswith("mcp-notes__")]


async def test_a_class_set_in_the_chat_is_recorded_as_yours_and_used(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    steps = [
        Script(tool_calls=[("mcp-notes__add_note", json.dumps({"title": "a", "body": "b"}))]),
        Script(text="asked first"),
    ]
    fake_model.brain = lambda request: steps.pop(0)
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/connectors")
    card = (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]
    picker = await tap(fake_telegram, card, "Change a class…", "Pick a tool")
    choices = await tap(fake_telegram, picker, "add_note", "Pick a class")
    card = await tap(fake_telegram, choices, "destructive", "add_note is now destructive")
    assert "destructive add_note  [on]  (class from: you)" in card["text"]

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add a note")
    await fake_telegram.wait_for_request(
        "sendMessage",
        predicate=lambda p: (
            "Approval needed — mcp-notes__add_note  (destructive)" in str(p.get("text"))
        ),
    )
    assert len(json.loads(with_notes.read_text())) == 1  # nothing ran without the tap
