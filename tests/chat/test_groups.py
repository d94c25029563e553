"""Palui in a group chat, through the real python-telegram-bot, the fake Bot API and a fake model:
it answers only what is addressed to it (a mention, a reply to it, a command), threads its answer
to that message, says nothing to strangers, and lets only the requester decide a card when
`[groups] approver = "requester"`."""

from __future__ import annotations

import json

import pytest

from palui.config import load_settings
from palui.errors import ConfigError
from tests.conftest import OWNER_ID
from tests.fakes.model_server import Script
from tests.toolkit import BOT, FRIEND_ID, GROUP, user_contents
from tests.toolkit import approve_data as _approve
from tests.toolkit import group_card as _card

STRANGER_ID = 555


def threaded_to(fake_telegram, text: str) -> int | None:
    """The message id the bot's message `text` was sent as a reply to."""
    sent = next(m for m in fake_telegram.sent_messages(GROUP) if m["text"] == text)
    return (sent.get("reply_to_message") or {}).get("message_id")


async def test_only_a_mention_a_reply_and_a_command_are_answered_each_threaded(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.queue(Script(text="Hi group."), Script(text="Yes, I heard you."))
    await start_palui()
    chatter = fake_telegram.push_message(GROUP, OWNER_ID, "lunch at noon, everyone?")
    await fake_telegram.wait_until_confirmed(chatter)

    mention = fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} hello there")
    await fake_telegram.wait_for_text(GROUP, "Hi group.")
    assert len(fake_model.requests) == 1
    assert user_contents(fake_model.requests[0]) == [f"{BOT} hello there"]  # no chatter
    # Threaded to the mention, sent once (no streamed preview in a group).
    assert threaded_to(fake_telegram, "Hi group.") == fake_telegram.message_id_of(mention)
    assert not any(r.method.lower() == "editmessagetext" for r in fake_telegram.requests)

    answer_id = fake_telegram.sent_messages(GROUP)[0]["message_id"]
    reply = fake_telegram.push_message(GROUP, OWNER_ID, "are you there?", reply_to=answer_id)
    await fake_telegram.wait_for_text(GROUP, "Yes, I heard you.")
    assert threaded_to(fake_telegram, "Yes, I heard you.") == fake_telegram.message_id_of(reply)
    # One session for the group: the second turn sees the first.
    assert user_contents(fake_model.requests[1]) == [f"{BOT} hello there", "are you there?"]

    other = fake_telegram.push_message(GROUP, OWNER_ID, "/status@some_other_bot")
    fake_telegram.push_message(GROUP, OWNER_ID, f"/status{BOT}")
    status = await fake_telegram.wait_for_text(GROUP, "model openai/fake-model")
    assert fake_telegram.is_confirmed(other)
    fake_telegram.push_message(GROUP, OWNER_ID, "/help")  # bare: Telegram sends bots those
    await fake_telegram.wait_for_text(GROUP, "Commands:")
    assert len(fake_model.requests) == 2  # commands never reach the model
    texts = [m["text"] for m in fake_telegram.sent_messages(GROUP)]
    assert texts[:2] == ["Hi group.", "Yes, I heard you."] and status["text"] in texts
    assert not any("some_other_bot" in t for t in texts)  # silence for another bot's command


async def test_a_strangers_mention_gets_no_refusal_and_runs_nothing(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.reply("for the owner")
    await start_palui()
    stranger = fake_telegram.push_message(GROUP, STRANGER_ID, f"{BOT} let me in")
    await fake_telegram.wait_until_confirmed(stranger)
    fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} hi")
    await fake_telegram.wait_for_text(GROUP, "for the owner")
    assert [m["text"] for m in fake_telegram.sent_messages(GROUP)] == ["for the owner"]
    assert fake_telegram.sent_messages(STRANGER_ID) == []
    assert len(fake_model.requests) == 1
    assert "let me in" not in str(fake_model.requests[0].messages)


async def test_under_approver_requester_only_the_requester_decides_a_card(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    steps = [Script(tool_calls=[("mcp-notes__delete_note", json.dumps({"id": "1"}))])]
    steps.append(Script(text="Deleted it."))
    fake_model.brain = lambda request: steps.pop(0)
    await start_palui(
        PALUI_ALLOWED_USERS=f"{OWNER_ID},{FRIEND_ID}", PALUI_GROUPS__APPROVER="requester"
    )
    fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} delete note 1")
    await fake_telegram.wait_for_text(GROUP, "Approval needed")
    card = _card(fake_telegram)

    # An allowed user who did not ask: refused, nothing runs.
    fake_telegram.push_callback(GROUP, FRIEND_ID, card["message_id"], _approve(card))
    refused = await fake_telegram.wait_for_request("answerCallbackQuery")
    assert refused.params["text"] == "Only the person who asked can decide this card."
    assert "1" in json.loads(with_notes.read_text())
    # A stranger's tap is refused as before (a toast only they see).
    fake_telegram.push_callback(GROUP, STRANGER_ID, card["message_id"], _approve(card))
    await fake_telegram.wait_for_request(
        "answerCallbackQuery", lambda p: p.get("text") == "Only the bot's owner can decide."
    )
    assert "1" in json.loads(with_notes.read_text())

    fake_telegram.push_callback(GROUP, OWNER_ID, card["message_id"], _approve(card))
    await fake_telegram.wait_for_text(GROUP, "Deleted it.")
    assert json.loads(with_notes.read_text()) == {}


def test_groups_approver_is_read_from_palui_toml_and_a_typo_is_one_line(tmp_path) -> None:
    path = tmp_path / "palui.toml"
    assert load_settings(path if path.exists() else None).groups.approver == "allowed"
    path.write_text('[groups]\napprover = "requester"\n')
    assert load_settings(path).groups.approver == "requester"
    path.write_text('[groups]\napprover = "anyone"\n')
    with pytest.raises(ConfigError, match=r"^\[groups\] approver in .*palui.toml: Input should"):
        load_settings(path)


async def test_a_bare_new_or_stop_is_left_to_other_bots_unless_it_names_or_replies_to_palui(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = lambda request: Script(text=f"answer {len(fake_model.requests)}")
    await start_palui()
    fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} remember apples")
    await fake_telegram.wait_for_text(GROUP, "answer 1")

    # Bare, they may be another bot's (Telegram sends them to the last bot that spoke): the
    # session stays, nothing is stopped or answered; a bare /status only shows, so it is.
    for bare in ("/new", "/stop", "/cancel"):
        await fake_telegram.wait_until_confirmed(fake_telegram.push_message(GROUP, OWNER_ID, bare))
    fake_telegram.push_message(GROUP, OWNER_ID, "/status")
    await fake_telegram.wait_for_text(GROUP, "model openai/fake-model")
    fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} what did I say?")
    await fake_telegram.wait_for_text(GROUP, "answer 2")
    assert user_contents(fake_model.requests[1]) == [
        f"{BOT} remember apples",
        f"{BOT} what did I say?",
    ]

    fake_telegram.push_message(GROUP, OWNER_ID, f"/new{BOT}")  # names Palui: a fresh session
    await fake_telegram.wait_for_text(GROUP, "Started a fresh conversation")
    fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} and now?")
    answer = await fake_telegram.wait_for_text(GROUP, "answer 3")
    assert user_contents(fake_model.requests[2]) == [f"{BOT} and now?"]

    # Replying to one of Palui's messages: it is Palui's too.
    fake_telegram.push_message(GROUP, OWNER_ID, "/new", reply_to=answer["message_id"])
    await fake_telegram.wait_for_messages(GROUP, len(fake_telegram.sent_messages(GROUP)) + 1)
    fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} once more")
    await fake_telegram.wait_for_text(GROUP, "answer 4")
    assert user_contents(fake_model.requests[3]) == [f"{BOT} once more"]

    texts = [m["text"] for m in fake_telegram.sent_messages(GROUP)]
    assert sum(t.startswith("Started a fresh conversation") for t in texts) == 2
    assert not any("Nothing is running" in t or "/cancel" in t for t in texts)
