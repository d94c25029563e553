"""A preview whose sendMessage reached the chat just before a crash, with its message id never
recorded, is still found by the re-run (editMessageText succeeds only on the bot's own
messages): the answer replaces it, shown once; the person's messages are never edited; and
where nothing is found, the answer is sent as before."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from palui.channels.telegram.pacing import MAX_SEND_ATTEMPTS
from palui.db import Database
from palui.db.models import Turn
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script
from tests.toolkit import LONG_ANSWER as ANSWER
from tests.toolkit import recorded_preview, visible_texts
from tests.toolkit import stop_palui as stop


async def killed_before_the_preview_was_recorded(
    start_palui: Any, fake_telegram: Any, database_url: str
) -> tuple[Any, int]:
    """A turn interrupted mid-stream whose preview went out but whose id was never written
    (what a kill -9 between the sendMessage and its record leaves): (its turn row, the id)."""
    first = await start_palui()
    person = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "tell me")
    message_id = await recorded_preview(database_url, timeout=90)
    async with first.app.db.session() as s, s.begin():
        await s.execute(
            update(Turn).where(Turn.chat_id == OWNER_CHAT).values(preview_message_id=None)
        )
        turn = await s.scalar(select(Turn).where(Turn.chat_id == OWNER_CHAT))
    await stop(first)
    assert turn is not None and turn.preview_floor == fake_telegram.message_id_of(person)
    assert visible_texts(fake_telegram) == [ANSWER]
    return turn, message_id


async def answered_in_html(fake_telegram: Any) -> None:
    await fake_telegram.wait_for_request(
        "editMessageText", predicate=lambda p: p.get("parse_mode") == "HTML", timeout=90
    )


async def test_a_preview_sent_but_never_recorded_is_taken_over_by_the_re_run(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    fake_model.queue(Script(text=ANSWER, hang=True), Script(text=ANSWER))
    _, message_id = await killed_before_the_preview_was_recorded(
        start_palui, fake_telegram, database_url
    )

    await start_palui()
    await answered_in_html(fake_telegram)
    [message] = fake_telegram.visible_messages(OWNER_CHAT)
    assert message["message_id"] == message_id
    assert message["text"] == ANSWER
    assert len(fake_model.requests) == 2


async def test_the_search_passes_the_persons_messages_without_editing_them(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    fake_model.queue(Script(text=ANSWER, hang=True), Script(text=ANSWER))
    turn, message_id = await killed_before_the_preview_was_recorded(
        start_palui, fake_telegram, database_url
    )
    person = turn.preview_floor
    # The floor just under the person's message (as when it was sent while the bot wrote):
    # the search meets it before the preview.
    db = Database(database_url)
    try:
        async with db.session() as s, s.begin():
            await s.execute(update(Turn).where(Turn.id == turn.id).values(preview_floor=person - 1))
    finally:
        await db.close()

    await start_palui()
    await answered_in_html(fake_telegram)
    edits = [r for r in fake_telegram.requests if r.method.lower() == "editmessagetext"]
    assert person in [int(r.params["message_id"]) for r in edits]  # refused: not the bot's
    [message] = fake_telegram.visible_messages(OWNER_CHAT)
    assert message["message_id"] == message_id
    assert message["text"] == ANSWER


async def test_with_nothing_found_the_answer_is_sent_as_before(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    fake_model.queue(Script(text=ANSWER, hang=True), Script(text=ANSWER))
    _, message_id = await killed_before_the_preview_was_recorded(
        start_palui, fake_telegram, database_url
    )
    fake_telegram.chats.deleted_messages.append((OWNER_CHAT, message_id))  # gone meanwhile

    await start_palui()
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=90)
    [message] = fake_telegram.visible_messages(OWNER_CHAT)
    assert message["message_id"] != message_id
    assert message["text"] == ANSWER


async def test_a_search_telegram_did_not_answer_waits_instead_of_a_second_preview(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    """Telegram refuses every probe of the first search (429 until the send gives up): the
    re-run does not start as if nothing were there (a fresh preview beside the old one); it
    looks again, finds the preview and answers in it, and the model is asked once more."""
    fake_model.queue(Script(text=ANSWER, hang=True), Script(text=ANSWER))
    _, message_id = await killed_before_the_preview_was_recorded(
        start_palui, fake_telegram, database_url
    )
    fake_telegram.flood("editMessageText", times=MAX_SEND_ATTEMPTS, retry_after=1)

    palui = await start_palui()
    await fake_model.wait_for_request(count=2, timeout=90)  # the re-run, once it could look
    await palui.app.chats.wait_idle(OWNER_CHAT)  # its answer delivered
    [message] = fake_telegram.visible_messages(OWNER_CHAT)
    assert message["message_id"] == message_id
    assert message["text"] == ANSWER
    assert len(fake_model.requests) == 2
