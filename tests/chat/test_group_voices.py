"""A group read right: each message of a group turn reaches the model with its author's name as
a label (OpenAI's `name`, not in the words), in history too; what Palui sends there is threaded
to the message it belongs to (answers, cards, command answers); and a voice note's 🎙 line is
stored once per note, so a turn re-run after its process went away shows it no second time."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from palui.domain.turn_record import TurnStart
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script

GROUP = -1_001_234_567_890
BOT = "@palui_test_bot"
FRIEND_ID = 1002
TWO_PEOPLE = {"PALUI_ALLOWED_USERS": f"{OWNER_ID},{FRIEND_ID}"}
AUDIO = b"OggS\x00\x02fake-opus-audio" * 10


def user_turns(request: ModelRequest) -> list[tuple[str | None, str]]:
    return [(m.get("name"), m["content"]) for m in request.messages if m["role"] == "user"]


def reply_to(message: dict[str, Any]) -> int | None:
    return (message.get("reply_to_message") or {}).get("message_id")


async def test_a_group_turns_model_request_names_each_messages_author(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui(**TWO_PEOPLE)
    fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} hi, I'm Ana", first_name="Ana María")
    await fake_telegram.wait_for_text(GROUP, "echo: @palui_test_bot hi, I'm Ana")
    fake_telegram.push_message(GROUP, FRIEND_ID, f"{BOT} and I'm Bo", first_name="Bo 🙂")
    await fake_telegram.wait_for_text(GROUP, "echo: @palui_test_bot and I'm Bo")
    # The names are labels beside the words (sanitized for the API), the words unchanged.
    assert user_turns(fake_model.requests[1]) == [
        ("Ana_Maria", f"{BOT} hi, I'm Ana"),
        ("Bo", f"{BOT} and I'm Bo"),
    ]
    # A private chat's messages carry no name.
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "just us")
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: just us")
    assert user_turns(fake_model.requests[2]) == [(None, "just us")]


async def test_a_group_card_and_a_group_command_answer_are_threaded(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    steps = [Script(tool_calls=[("mcp-notes__delete_note", json.dumps({"id": "1"}))])]
    fake_model.brain = lambda request: steps.pop(0) if steps else Script(text="Done.")
    await start_palui()
    asked = fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} delete note 1")
    card = await fake_telegram.wait_for_text(GROUP, "Approval needed")
    assert reply_to(card) == fake_telegram.message_id_of(asked)

    status = fake_telegram.push_message(GROUP, OWNER_ID, f"/status{BOT}")
    answer = await fake_telegram.wait_for_text(GROUP, "model openai/fake-model")
    assert reply_to(answer) == fake_telegram.message_id_of(status)
    sheet = fake_telegram.push_message(GROUP, OWNER_ID, f"/connectors{BOT}")
    threaded = fake_telegram.message_id_of(sheet)
    card = await fake_telegram.wait_for_request(
        "sendMessage", lambda p: (p.get("reply_parameters") or {}).get("message_id") == threaded
    )
    assert card.params.get("reply_markup")  # the notes connector's card, with its switches


async def stop(handle: Any) -> None:
    """Stop an in-process Palui as a shutdown does: its turn is cut off unanswered, its
    messages stay in the inbox for the next process to answer."""
    handle.stop.set()
    await asyncio.wait_for(handle.task, 30)
    await handle.app.__aexit__(None, None, None)
    handle.app.__aexit__ = _already_closed  # the fixture's teardown closes it again


async def _already_closed(*_: Any) -> None:
    return None


async def test_the_voice_lines_quote_is_shown_once_when_its_turn_is_run_again(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.transcriptions.text = "remind me at five"
    fake_model.queue(Script(text="Will do.", hang=True), Script(text="Will do."))
    whisper = {"PALUI_TRANSCRIPTION_MODEL": "openai/whisper-1"}
    first = await start_palui(**whisper)
    fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO)
    await fake_telegram.wait_for_text(OWNER_CHAT, "🎙")
    await fake_model.wait_until_in_flight()
    await stop(first)  # between the 🎙 line and the answer

    await start_palui(**whisper)
    await fake_model.wait_for_request(2)
    await fake_telegram.wait_for_text(OWNER_CHAT, "Will do.")
    texts = [m.get("text") for m in fake_telegram.visible_messages(OWNER_CHAT)]
    assert texts.count("🎙 “remind me at five”") == 1
    assert len(fake_model.transcriptions.received) == 2  # the note was read again, not quoted


async def test_a_message_waiting_behind_another_processs_turn_gets_eyes_from_this_one(
    start_palui, fake_telegram, fake_model, store
) -> None:
    """Another process holds the chat and runs its turn: the message this process stores waits
    for it, and gets its 👀 here (the running turn is seen with the message's INSERT)."""
    await start_palui()
    elsewhere = "another-host:1:cafe"
    fence = await store.leases.acquire(OWNER_CHAT, elsewhere, ttl_s=600)
    assert fence is not None
    await store.heartbeats.beat(elsewhere, datetime.now(UTC))
    await store.turns.start_chat_turn(TurnStart("elsewhere", OWNER_CHAT, fence=fence), rerun=False)
    waiting = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "are you there?")
    await fake_telegram.wait_for_request("setMessageReaction")
    assert fake_telegram.groups.emoji_on(OWNER_CHAT, fake_telegram.message_id_of(waiting)) == ["👀"]
