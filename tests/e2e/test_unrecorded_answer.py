"""An answer part that reached the chat just before a crash, with its record never written, is
found after the restart (edited to its exact formatted text, Telegram answers "not modified"
only on the bot's own message showing it) and recorded, not sent again; a message the records
name as something else is never edited, nor is the person's; and a reply sent normally costs
no probe at all."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select, update

from palui.channels.formatting import split_for_telegram
from palui.channels.telegram import TelegramChannel
from palui.db import Database
from palui.db.models import OutboxMessage
from palui.errors import ChannelError
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script
from tests.toolkit import Daemon, visible_texts
from tests.toolkit import stop_palui as stop

ANSWER = "The **answer** is 42."
SHOWN = "The answer is 42."  # as Telegram shows it: the bold is an entity
NEXT = "You're welcome."
NO_STREAM = {"PALUI_STREAM_REPLIES": "false"}


async def forget_the_record(database_url: str) -> None:
    """What a kill -9 between the part's sendMessage and its record leaves: a row that says
    nothing was sent, stored before the next process started."""
    db = Database(database_url)
    try:
        async with db.session() as s, s.begin():
            await s.execute(
                update(OutboxMessage)
                .where(OutboxMessage.chat_id == OWNER_CHAT)
                .values(parts_sent=0, sent_at=None, last_message_id=None)
            )
    finally:
        await db.close()


async def recorded_ids(database_url: str) -> list[int | None]:
    db = Database(database_url)
    try:
        async with db.session() as s:
            rows = await s.scalars(
                select(OutboxMessage.last_message_id)
                .where(OutboxMessage.chat_id == OWNER_CHAT)
                .order_by(OutboxMessage.id)
            )
            return list(rows)
    finally:
        await db.close()


def probes(fake_telegram: Any) -> list[int]:
    return [
        int(r.params["message_id"]) for r in fake_telegram.requests if r.method == "editMessageText"
    ]


async def test_a_part_sent_but_never_recorded_is_adopted_after_a_restart_not_sent_again(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    fake_model.queue(Script(text=ANSWER), Script(text=NEXT))
    first = await start_palui(**NO_STREAM)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "what is it?")
    [answer] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=60)
    await stop(first)
    assert probes(fake_telegram) == []  # the normal path looks for nothing
    await forget_the_record(database_url)

    await start_palui(**NO_STREAM)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "thanks")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=60)
    assert visible_texts(fake_telegram) == [SHOWN, NEXT]
    [shown, _] = fake_telegram.visible_messages(OWNER_CHAT)
    # Probed with the very HTML it was sent with: "not modified", so nothing about it changed.
    assert probes(fake_telegram) == [answer["message_id"]]
    assert "edit_date" not in shown
    assert shown["entities"] == answer["entities"]
    assert (await recorded_ids(database_url))[0] == answer["message_id"]


async def test_the_search_edits_neither_a_message_the_records_name_nor_the_persons(
    fake_telegram,
) -> None:
    chats = fake_telegram.chats
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "first")  # the floor
    card = chats.api_send_message({"chat_id": OWNER_CHAT, "text": "A card."})  # on record
    person = fake_telegram.message_id_of(fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "second"))
    [part] = split_for_telegram(ANSWER)
    sent = chats.api_send_message({"chat_id": OWNER_CHAT, "text": part.html, "parse_mode": "HTML"})
    channel = TelegramChannel(fake_telegram.token, fake_telegram.url)
    try:
        await channel.bot.initialize()
        skip = {card["message_id"]}
        found = await channel.find_part(OWNER_CHAT, card["message_id"] - 1, part, skip)
    finally:
        await channel.bot.shutdown()
    assert found == sent["message_id"]
    assert probes(fake_telegram) == [person, sent["message_id"]]  # the card: never
    texts = [m["text"] for m in fake_telegram.visible_messages(OWNER_CHAT)]
    assert texts == ["A card.", SHOWN]
    assert all("edit_date" not in m for m in fake_telegram.visible_messages(OWNER_CHAT))


@pytest.mark.slow
async def test_kill_9_after_telegram_took_the_answer_shows_it_once(
    daemon: Daemon,
    fake_telegram,
    fake_model,
    database_url: str,
) -> None:
    daemon.env.update(NO_STREAM)
    fake_model.queue(Script(text=ANSWER), Script(text=NEXT))
    accepted = fake_telegram.hold_answer("sendMessage", lambda p: "answer" in str(p.get("text")))
    await daemon.start()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "what is it?")
    await asyncio.wait_for(accepted.wait(), 60)  # in the chat; Palui has not heard so
    await daemon.kill9()
    [answer] = fake_telegram.visible_messages(OWNER_CHAT)
    assert await recorded_ids(database_url) == [None]  # never recorded

    await daemon.start()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "thanks")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=90)
    assert visible_texts(fake_telegram) == [SHOWN, NEXT]
    assert (await recorded_ids(database_url))[0] == answer["message_id"]


async def test_a_part_whose_send_timed_out_is_not_sent_again_blindly(fake_telegram) -> None:
    """Telegram took the part but its answer never came: the send fails (a transient error, so
    the outbox looks for the part before its next try) instead of sending it a second time."""
    [part] = split_for_telegram(ANSWER)
    accepted = fake_telegram.hold_answer("sendMessage", lambda p: "answer" in str(p.get("text")))
    channel = TelegramChannel(fake_telegram.token, fake_telegram.url, read_timeout_s=0.5)
    try:
        await channel.bot.initialize()
        with pytest.raises(ChannelError) as failed:
            await channel.send_part(OWNER_CHAT, part)
    finally:
        await channel.bot.shutdown()
    assert accepted.is_set()
    assert not failed.value.permanent
    sends = [r for r in fake_telegram.requests if r.method == "sendMessage"]
    assert len(sends) == 1
    assert visible_texts(fake_telegram) == [SHOWN]
