"""The preview an interrupted turn left is taken over whatever its re-run does: with streaming
switched off since (the answer is still edited into it; a failure still removes it), and when
the re-run pauses for an approval (the preview goes; the answer after the tap shows once)."""

from __future__ import annotations

import json

from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.toolkit import LONG_ANSWER as ANSWER
from tests.toolkit import buttons, recorded_preview, visible_texts, wait_for_card
from tests.toolkit import script_call as call
from tests.toolkit import stop_palui as stop


async def interrupted_mid_stream(start_palui, fake_telegram, database_url: str) -> int:
    """A turn killed while its preview shows (a shutdown leaves it running); the preview id."""
    first = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "tell me")
    message_id = await recorded_preview(database_url, timeout=90)
    await stop(first)
    assert visible_texts(fake_telegram) == [ANSWER]
    return message_id


async def test_with_streaming_switched_off_at_restart_the_answer_is_edited_into_the_preview(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    fake_model.queue(Script(text=ANSWER, hang=True), Script(text=ANSWER))
    message_id = await interrupted_mid_stream(start_palui, fake_telegram, database_url)

    await start_palui(PALUI_STREAM_REPLIES="false")
    await fake_telegram.wait_for_request(
        "editMessageText", predicate=lambda p: p.get("parse_mode") == "HTML", timeout=90
    )
    [message] = fake_telegram.visible_messages(OWNER_CHAT)
    assert message["message_id"] == message_id
    assert message["text"] == ANSWER
    assert len(fake_model.requests) == 2
    assert not fake_model.requests[1].stream  # the re-run did not stream


async def test_with_streaming_switched_off_a_re_run_that_fails_removes_the_preview(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    fake_model.queue(Script(text=ANSWER, hang=True), Script(status=400, error="bad request"))
    message_id = await interrupted_mid_stream(start_palui, fake_telegram, database_url)

    await start_palui(PALUI_STREAM_REPLIES="false")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=90)
    assert (OWNER_CHAT, message_id) in fake_telegram.deleted_messages
    [reply] = visible_texts(fake_telegram)
    assert reply.startswith("The model call failed")


async def test_a_re_run_that_pauses_removes_the_preview_and_the_approved_answer_shows_once(
    with_notes, start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    def brain(request: ModelRequest) -> Script:
        if len(fake_model.requests) == 1:
            return Script(text=ANSWER, hang=True)  # the first run, interrupted mid-stream
        if request.messages[-1].get("role") != "tool":
            return call("mcp-notes__delete_note", id="1")  # destructive: a card
        return Script(text="Deleted note 1.")

    fake_model.brain = brain
    message_id = await interrupted_mid_stream(start_palui, fake_telegram, database_url)

    await start_palui()
    card = await wait_for_card(fake_telegram)
    assert (OWNER_CHAT, message_id) in fake_telegram.deleted_messages
    approve = buttons(card)["✅ Approve"]
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], approve)
    await fake_telegram.wait_for_text(OWNER_CHAT, "Deleted note 1.", timeout=90)
    assert json.loads(with_notes.read_text()) == {}
    texts = visible_texts(fake_telegram)
    assert ANSWER not in texts
    assert texts.count("Deleted note 1.") == 1
    [card_now, reply] = texts  # the card (as decided) and the answer: no preview left
    assert "Approved" in card_now and reply == "Deleted note 1."
