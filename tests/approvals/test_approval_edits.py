"""✏️ Edit on an approval card: a question per argument in the chat, then the edited call runs
once on Approve (the real notes MCP server's data shows it), through the fake Bot API."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from palui.approvals.answers import BadValue, parse_value
from palui.db.models import ApprovalRow
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.cli import palui_main
from tests.fakes.model_server import Script
from tests.toolkit import buttons, scripted, tool_results
from tests.toolkit import script_call as call
from tests.toolkit import until_tool_running as _until_tool_running

EDITED = "✏️ Edited by User1001"
WAIT_S = 30  # generous: the machine may be busy; a pass never waits this long


# The notes server runs in this process (the same server and MCP session, no stdio process):
# these tests are about the edit flow, not the transport.
pytestmark = pytest.mark.usefixtures("mcp_in_process")


def _says(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda params: text in str(params.get("text", ""))


async def wait_for_message(fake_telegram, *parts: str) -> dict:
    """The first message of the chat whose current text holds every part."""

    def find() -> dict | None:
        return next(
            (
                m
                for m in fake_telegram.sent_messages(OWNER_CHAT)
                if all(part in m["text"] for part in parts)
            ),
            None,
        )

    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda _: find() is not None, timeout=WAIT_S
    )
    found = find()
    assert found is not None
    return found


async def question(fake_telegram, position: str, *parts: str) -> dict:
    return await wait_for_message(fake_telegram, "✏️ Editing", position, *parts)


def tap(fake_telegram, message: dict, label: str) -> None:
    fake_telegram.push_callback(
        OWNER_CHAT, OWNER_ID, message["message_id"], buttons(message)[label]
    )


def notes(path: Path) -> list[dict[str, str]]:
    return list(json.loads(path.read_text()).values())


def tainted_add_note(**arguments: object) -> list[Script]:
    """A search (untrusted: the turn is tainted) then a write, which therefore needs a card."""
    return [call("mcp-notes__search_notes", query="milk"), call("mcp-notes__add_note", **arguments)]


async def approval_rows(palui) -> list[ApprovalRow]:
    async with palui.app.db.session() as s:
        return list(await s.scalars(select(ApprovalRow)))


def add_guards(config_dir: Path, text: str) -> None:
    config = config_dir / "palui.toml"
    config.write_text(config.read_text() + text)


async def test_edit_one_argument_keep_another_and_the_edited_call_runs_once(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(
        *tainted_add_note(title="eggs", body="12"), Script(text="Added your note.")
    )
    palui = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add eggs")
    card = await wait_for_message(fake_telegram, "Approval needed")
    assert len(buttons(card)["✏️ Edit"].encode()) <= 64
    tap(fake_telegram, card, "✏️ Edit")

    first = await question(fake_telegram, "1 of 2", "title", "Now: eggs")
    assert "or . to keep it" in first["text"]
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "bacon")
    await question(fake_telegram, "2 of 2", "body", "Now: 12")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, ".")

    edited = await wait_for_message(fake_telegram, "Approval needed", EDITED)
    assert 'title (was "eggs")' in edited["text"]
    assert "title: bacon" in edited["text"] and "body: 12" in edited["text"]
    assert set(buttons(edited)) >= {"✅ Approve", "❌ Deny", "✏️ Edit"}
    assert len(fake_model.requests) == 2  # the answers started no turn
    assert notes(with_notes) == [{"title": "Groceries", "body": "milk"}]  # nothing ran yet

    tap(fake_telegram, edited, "✅ Approve")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=_says("Added your note."), timeout=WAIT_S
    )
    assert notes(with_notes)[1:] == [{"title": "bacon", "body": "12"}]
    result = tool_results(fake_model.requests[-1])[-1]
    assert "The person edited this call's arguments" in result
    assert 'title: you sent "eggs", they set "bacon"' in result and "added note 2" in result

    [row] = await approval_rows(palui)
    assert json.loads(row.model_arguments or "") == {"title": "eggs", "body": "12"}
    assert json.loads(row.arguments) == {"title": "bacon", "body": "12"}
    assert (row.edited_by, row.status) == ("User1001", "executed")
    code, out, _ = await palui_main("runs", "show", row.turn_id, "--json")
    [approval] = [s for s in json.loads(out)["steps"] if s["stage"] == "approval"]
    assert code == 0 and "edited the arguments" in approval["reason"]
    assert approval["detail"]["before"] == {"title": "eggs", "body": "12"}
    assert approval["detail"]["after"] == {"title": "bacon", "body": "12"}

    # The card that was edited is stale: a tap on it runs nothing.
    fake_telegram.push_callback(
        OWNER_CHAT, OWNER_ID, card["message_id"], buttons(card)["✅ Approve"]
    )
    await fake_telegram.wait_for_request(
        "answerCallbackQuery", predicate=_says("was edited"), timeout=WAIT_S
    )
    assert len(notes(with_notes)) == 2 and len(fake_model.requests) == 3


async def test_a_refused_or_unreadable_value_is_asked_again(
    with_notes, start_palui, fake_telegram, fake_model, tmp_path
) -> None:
    # slow_op(seconds: number), classed destructive by the kinds file so it asks first.
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tool_kinds.yaml").write_text(
        "tools:\n  mcp-notes__slow_op:\n    kind: destructive\n"
    )
    config = with_notes.parent / "palui.toml"
    config.write_text(
        config.read_text().replace('"redefine_search"]', '"redefine_search", "slow_op"]')
    )
    add_guards(with_notes.parent, '\n[guards."mcp-notes__slow_op".args.seconds]\nmaximum = 5\n')
    fake_model.brain = scripted(call("mcp-notes__slow_op", seconds=2), Script(text="Slept."))
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "sleep a bit")
    card = await wait_for_message(fake_telegram, "Approval needed")
    tap(fake_telegram, card, "✏️ Edit")
    await question(fake_telegram, "1 of 1", "seconds", "Now: 2", "(a number)")

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "soon")
    await question(fake_telegram, "1 of 1", "⚠️ That isn't a number.")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "60")
    refused = await question(fake_telegram, "1 of 1", "⚠️ Not allowed:")
    assert "'seconds' must be at most 5" in refused["text"]
    assert "Call mcp-notes__slow_op again" not in refused["text"]  # that part is for the model
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "0.1")

    edited = await wait_for_message(fake_telegram, "Approval needed", EDITED)
    assert "seconds: 0.1" in edited["text"]
    tap(fake_telegram, edited, "✅ Approve")
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("Slept."), timeout=WAIT_S)
    assert "slept 0.1s" in tool_results(fake_model.requests[-1])[0]


async def test_a_pinned_argument_is_shown_not_asked_and_cannot_change(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    add_guards(with_notes.parent, '\n[guards."mcp-notes__add_note"]\npin = { body = "from ops" }\n')
    fake_model.brain = scripted(
        *tainted_add_note(title="eggs", body="12"), Script(text="Pinned and done.")
    )
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add eggs")
    card = await wait_for_message(fake_telegram, "Approval needed")
    tap(fake_telegram, card, "✏️ Edit")
    only = await question(fake_telegram, "1 of 1", "title")
    assert "🔒 Pinned, can't be changed: body: from ops" in only["text"]
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "bacon")

    edited = await wait_for_message(fake_telegram, "Approval needed", EDITED)
    tap(fake_telegram, edited, "✅ Approve")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=_says("Pinned and done."), timeout=WAIT_S
    )
    assert notes(with_notes)[1:] == [{"title": "bacon", "body": "from ops"}]


async def test_cancel_leaves_the_original_card_working(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(
        *tainted_add_note(title="eggs", body="12"), Script(text="Added as asked.")
    )
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add eggs")
    card = await wait_for_message(fake_telegram, "Approval needed")
    tap(fake_telegram, card, "✏️ Edit")
    first = await question(fake_telegram, "1 of 2", "title")
    tap(fake_telegram, first, "✖️ Cancel")
    await fake_telegram.wait_for_request(
        "editMessageText", predicate=_says("Edit cancelled"), timeout=WAIT_S
    )

    tap(fake_telegram, card, "✏️ Edit")  # again, and this time /cancel ends it
    await question(fake_telegram, "1 of 2", "title")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/cancel")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=_says("Edit cancelled."), timeout=WAIT_S
    )

    tap(fake_telegram, card, "✏️ Edit")  # a third time, keeping every value
    tap(fake_telegram, await question(fake_telegram, "1 of 2", "title"), "⏭ Keep the rest")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=_says("Nothing was changed."), timeout=WAIT_S
    )

    tap(fake_telegram, card, "✅ Approve")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=_says("Added as asked."), timeout=WAIT_S
    )
    assert notes(with_notes)[1:] == [{"title": "eggs", "body": "12"}]


async def test_deny_after_an_edit_runs_nothing(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(*tainted_add_note(title="eggs", body="12"), Script(text="Left it."))
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add eggs")
    card = await wait_for_message(fake_telegram, "Approval needed")
    tap(fake_telegram, card, "✏️ Edit")
    await question(fake_telegram, "1 of 2", "title")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "bacon")
    second = await question(fake_telegram, "2 of 2", "body")
    tap(fake_telegram, second, "↩️ Keep")

    edited = await wait_for_message(fake_telegram, "Approval needed", EDITED)
    tap(fake_telegram, edited, "❌ Deny")
    await fake_telegram.wait_for_request("sendMessage", predicate=_says("Left it."), timeout=WAIT_S)
    assert notes(with_notes) == [{"title": "Groceries", "body": "milk"}]
    assert "denied" in tool_results(fake_model.requests[-1])[-1]
    tap(fake_telegram, card, "✅ Approve")  # the original, stale card
    await fake_telegram.wait_for_request(
        "answerCallbackQuery", predicate=_says("was edited"), timeout=WAIT_S
    )
    assert notes(with_notes) == [{"title": "Groceries", "body": "milk"}]


async def test_a_second_edit_still_records_the_models_values(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(
        *tainted_add_note(title="eggs", body="12"), Script(text="Saved the ham note.")
    )
    palui = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add eggs")
    tap(fake_telegram, await wait_for_message(fake_telegram, "Approval needed"), "✏️ Edit")
    await question(fake_telegram, "1 of 2", "title")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "bacon")
    await question(fake_telegram, "2 of 2", "body")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, ".")
    once = await wait_for_message(fake_telegram, "Approval needed", "title: bacon")

    tap(fake_telegram, once, "✏️ Edit")
    await question(fake_telegram, "1 of 2", "Now: bacon")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "ham")
    await question(fake_telegram, "2 of 2", "body")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, ".")
    twice = await wait_for_message(fake_telegram, "Approval needed", "title: ham")
    assert 'title (was "eggs")' in twice["text"]

    tap(fake_telegram, once, "✅ Approve")  # the first edited card is stale now
    await fake_telegram.wait_for_request("answerCallbackQuery", predicate=_says("was edited"))
    tap(fake_telegram, twice, "✅ Approve")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=_says("Saved the ham note."), timeout=WAIT_S
    )
    assert notes(with_notes)[1:] == [{"title": "ham", "body": "12"}]
    [row] = await approval_rows(palui)
    assert json.loads(row.model_arguments or "")["title"] == "eggs"


async def test_a_message_sent_before_edit_was_tapped_is_not_taken_as_an_answer(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(
        *tainted_add_note(title="eggs", body="12"),
        call("mcp-notes__slow_op", seconds=3),  # the next turn is busy when Edit is tapped
        Script(text="Slow thing done."),
        Script(text="Hello to you too."),
    )
    palui = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add eggs")
    card = await wait_for_message(fake_telegram, "Approval needed")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "do the slow thing")
    await _until_tool_running(palui.app)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello")  # waits: the chat is busy
    tap(fake_telegram, card, "✏️ Edit")
    await question(fake_telegram, "1 of 2", "title")

    await fake_telegram.wait_for_request(
        "sendMessage", predicate=_says("Hello to you too."), timeout=WAIT_S
    )
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "bacon")  # this one is the answer
    await question(fake_telegram, "2 of 2", "body")


async def test_an_edit_in_progress_survives_a_restart(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = scripted(
        *tainted_add_note(title="eggs", body="12"), Script(text="Added after the restart.")
    )
    first = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "add eggs")
    card = await wait_for_message(fake_telegram, "Approval needed")
    tap(fake_telegram, card, "✏️ Edit")
    await question(fake_telegram, "1 of 2", "title")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "bacon")
    await question(fake_telegram, "2 of 2", "body")
    first.stop.set()
    await first.task
    await first.app.__aexit__(None, None, None)

    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "13")  # answers the open question
    edited = await wait_for_message(fake_telegram, "Approval needed", EDITED)
    assert "body: 13" in edited["text"] and "title: bacon" in edited["text"]
    tap(fake_telegram, edited, "✅ Approve")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=_says("Added after the restart."), timeout=WAIT_S
    )
    assert notes(with_notes)[1:] == [{"title": "bacon", "body": "13"}]
    assert len(fake_model.requests) == 3


@pytest.mark.parametrize(
    ("text", "spec", "model_value", "expected"),
    [
        ("hello world", {"type": "string"}, "x", "hello world"),
        ("12", {"type": "string"}, "x", "12"),  # text stays text
        ("12", {"type": "integer"}, 3, 12),
        ("1,000", {"type": "integer"}, 3, 1000),
        ("2.5", {"type": "number"}, 1, 2.5),
        ("yes", {"type": "boolean"}, False, True),
        ("off", {"type": "boolean"}, True, False),
        ('["a", "b"]', {"type": "array"}, [], ["a", "b"]),
        ('{"k": 1}', {"type": "object"}, {}, {"k": 1}),
        ("7", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None, 7),
        ("null", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, 1, None),
        ("42", {}, 1, 42),  # no declared type: the model's value's type
        ("plain", {}, None, "plain"),
        ("HIGH", {"type": "string", "enum": ["low", "high"]}, "low", "high"),
    ],
)
def test_answers_are_read_as_the_arguments_type(
    text: str, spec: dict, model_value: Any, expected: Any
) -> None:
    value = parse_value(text, spec, model_value)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ("text", "spec", "message"),
    [
        ("soon", {"type": "number"}, "That isn't a number."),
        ("2.5", {"type": "integer"}, "That isn't a whole number."),
        ("maybe", {"type": "boolean"}, "That isn't yes or no."),
        ("[1,", {"type": "array"}, "That isn't a JSON list"),
        ("nan", {"type": "number"}, "That isn't a number."),
        ("medium", {"type": "string", "enum": ["low", "high"]}, "allowed values: low, high"),
    ],
)
def test_an_answer_of_the_wrong_type_is_refused_with_a_reason(
    text: str, spec: dict, message: str
) -> None:
    with pytest.raises(BadValue, match=message.replace("[", r"\[")):
        parse_value(text, spec)


async def test_console_cards_still_ask_yes_or_no(
    with_notes, settings_env, fake_model, mcp_in_process
) -> None:
    from palui.app.root import Palui
    from palui.config import load_settings

    fake_model.brain = scripted(call("mcp-notes__delete_note", id="1"), Script(text="Deleted."))
    lines = iter(["delete note 1", "y"])

    def read_line(prompt: str) -> str:
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    out = io.StringIO()
    async with Palui(load_settings(), mcp_transport=mcp_in_process) as app:
        await app.chat_console(read_line, out)
    assert notes(with_notes) == []
    assert "✅ Approved by @console" in out.getvalue() and "Deleted." in out.getvalue()
