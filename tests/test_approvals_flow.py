"""Tools from a real MCP server, the policy, and approval cards, through the fake Bot API."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from palui.db.models import ApprovalRow
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script


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
    # The call is recorded as running in the database before it goes out; nothing to await.
    from sqlalchemy import select

    from palui.db.models import CallRecordRow

    async with asyncio.timeout(20):
        while True:
            async with app.db.session() as s:
                if await s.scalar(select(CallRecordRow).where(CallRecordRow.status == "running")):
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
    assert "Why: destructive tools always ask first." in card["text"]
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


async def test_deny_runs_nothing_and_the_model_is_told(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(
        call("mcp-notes__delete_note", id="1"), Script(text="OK, I left it.")
    )
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "delete note 1")
    card = await wait_for_card(fake_telegram)
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], buttons(card)["❌ Deny"])
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("OK, I left it."))
    assert "1" in json.loads(with_notes.read_text())
    assert "The person denied this call." in tool_results(fake_model.requests[-1])[0]
    await fake_telegram.wait_for_request("editMessageText", predicate=_says("❌ Denied by"))


async def test_forged_stranger_and_expired_taps_run_nothing(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(call("mcp-notes__delete_note", id="1"), Script(text="expired"))
    palui = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "delete note 1")
    card = await wait_for_card(fake_telegram)
    approve = buttons(card)["✅ Approve"]

    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], "ap:forged-token:y")
    await fake_telegram.wait_for_request("answerCallbackQuery", predicate=_says("no longer active"))
    fake_telegram.push_callback(OWNER_CHAT, 4242, card["message_id"], approve)  # a stranger
    await fake_telegram.wait_for_request("answerCallbackQuery", predicate=_says("owner can decide"))

    async with palui.app.db.session() as s, s.begin():
        past = datetime.now(UTC) - timedelta(minutes=1)
        await s.execute(update(ApprovalRow).values(expires_at=past))
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], approve)
    await fake_telegram.wait_for_request("answerCallbackQuery", predicate=_says("expired"))
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("expired"))
    assert "1" in json.loads(with_notes.read_text())
    await fake_telegram.wait_for_request("editMessageText", predicate=_says("⌛ Expired"))
    assert "it expired" in tool_results(fake_model.requests[-1])[0]


async def test_taint_carries_into_the_next_turn_until_new(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(
        call("mcp-notes__search_notes", query="milk"),  # turn 1 reads untrusted content
        Script(text="found it"),
        call("mcp-notes__add_note", title="eggs", body="12"),  # turn 2: a write asks
    )
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "find milk")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add eggs")
    card = await wait_for_card(fake_telegram)
    assert "(write)" in card["text"]
    assert "this conversation includes content from mcp-notes, 1 turn ago" in card["text"]
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], buttons(card)["❌ Deny"])
    fake_model.brain = scripted(
        Script(text="denied, fine"),
        call("mcp-notes__add_note", title="eggs", body="12"),  # after /new: runs at once
        Script(text="added"),
    )
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("denied, fine"))
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/new")
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("fresh conversation"))
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add eggs")
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("added"))
    titles = [n["title"] for n in json.loads(with_notes.read_text()).values()]
    assert titles == ["Groceries", "eggs"]


async def test_a_write_in_an_untainted_chat_turn_runs_at_once(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(
        call("mcp-notes__add_note", title="eggs", body="12"), Script(text="added")
    )
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add eggs")
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("added"))
    assert len(json.loads(with_notes.read_text())) == 2
    assert not [m for m in fake_telegram.sent_messages(OWNER_CHAT) if "Approval" in m["text"]]


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


async def test_two_held_calls_get_a_card_each_and_the_turn_resumes_after_both(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    both = Script(
        tool_calls=[
            ("mcp-notes__delete_note", json.dumps({"id": "1"})),
            ("mcp-notes__delete_note", json.dumps({"id": "2"})),
        ]
    )
    fake_model.brain = scripted(both, Script(text="one kept, one gone"))
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "delete notes 1 and 2")
    second = await wait_for_card(fake_telegram, 2)
    first = await wait_for_card(fake_telegram, 1)
    assert "id: 1" in first["text"] and "id: 2" in second["text"]

    fake_telegram.push_callback(
        OWNER_CHAT, OWNER_ID, first["message_id"], buttons(first)["✅ Approve"]
    )
    await fake_telegram.wait_for_request("answerCallbackQuery", predicate=_says("Approved."))
    assert len(fake_model.requests) == 1  # still waiting for the second card
    fake_telegram.push_callback(
        OWNER_CHAT, OWNER_ID, second["message_id"], buttons(second)["❌ Deny"]
    )
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("one kept, one gone"))
    assert json.loads(with_notes.read_text()) == {}
    results = tool_results(fake_model.requests[-1])
    assert results[0] == "deleted note 1" and "denied" in results[1]


async def test_long_arguments_are_cut_on_the_card_with_a_button_to_see_all(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    body = "lorem ipsum " * 100
    fake_model.brain = scripted(call("mcp-notes__delete_note", id="1", reason=body))
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "delete it")
    card = await wait_for_card(fake_telegram)
    assert body not in card["text"] and "reason: lorem ipsum" in card["text"]

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/approvals")
    await fake_telegram.wait_for_request(
        "sendMessage",
        predicate=_says("Pending approvals: 1\n• mcp-notes__delete_note (destructive)"),
    )
    show_all = buttons(card)["📄 Show all arguments"]
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], show_all)
    full = await fake_telegram.wait_for_request("sendMessage", predicate=_says("All arguments"))
    assert body.strip() in full.params["text"]
    assert "1" in json.loads(with_notes.read_text())  # looking is not deciding
