"""The fake Bot API behaves like Telegram where Palui depends on it, seen through real PTB."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import AsyncIterator

import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.constants import ParseMode
from telegram.error import BadRequest, Conflict, InvalidToken, RetryAfter
from telegram.ext import Application, CommandHandler, ContextTypes, MessageHandler, filters

from tests.fakes.telegram_api import FakeTelegram

CHAT = 1001


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def bot(fake: FakeTelegram) -> AsyncIterator[Bot]:
    async with Bot(fake.token, base_url=fake.base_url) as bot:
        yield bot


def keyboard(data: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton("Approve", callback_data=data)]])


async def test_get_me_answers_with_the_bot_user(fake: FakeTelegram, bot: Bot) -> None:
    me = await bot.get_me()

    assert me.is_bot
    assert me.username == fake.bot_user["username"]


async def test_unconfirmed_update_is_redelivered_until_a_later_offset(
    fake: FakeTelegram, bot: Bot
) -> None:
    update_id = fake.push_text(CHAT, CHAT, "hello")

    first = await bot.get_updates()
    again = await bot.get_updates()

    assert [u.update_id for u in first] == [update_id]
    assert [u.update_id for u in again] == [update_id]
    assert again[0].message is not None and again[0].message.text == "hello"
    assert fake.delivered_count(update_id) == 2
    assert not fake.is_confirmed(update_id)

    assert await bot.get_updates(offset=update_id + 1) == ()
    await fake.wait_until_confirmed(update_id, timeout=1)
    assert await bot.get_updates() == ()
    assert fake.delivered_count(update_id) == 2


async def test_long_poll_returns_as_soon_as_an_update_is_pushed(
    fake: FakeTelegram, bot: Bot
) -> None:
    started = time.monotonic()
    poll = asyncio.create_task(bot.get_updates(timeout=30))
    await fake.wait_for_request("getUpdates")

    update_id = fake.push_text(CHAT, CHAT, "ping")
    async with asyncio.timeout(5):
        updates = await poll

    assert [u.update_id for u in updates] == [update_id]
    assert time.monotonic() - started < 5
    await fake.wait_for_delivery(update_id, timeout=1)


async def test_long_poll_without_updates_returns_empty_after_its_timeout(bot: Bot) -> None:
    started = time.monotonic()

    assert await bot.get_updates(timeout=1) == ()
    assert time.monotonic() - started >= 0.9


async def test_a_second_poll_ends_the_first_with_conflict(fake: FakeTelegram, bot: Bot) -> None:
    first = asyncio.create_task(bot.get_updates(timeout=30))
    await fake.wait_for_request("getUpdates")

    # PTB gives getUpdates a one-connection pool, so the second poller is another Bot.
    async with Bot(fake.token, base_url=fake.base_url) as other:
        assert await other.get_updates(timeout=0) == ()
    with pytest.raises(Conflict, match="terminated by other getUpdates"):
        await first


async def test_command_text_carries_a_bot_command_entity(fake: FakeTelegram, bot: Bot) -> None:
    fake.push_text(CHAT, CHAT, "/status now", username="ana")

    [update] = await bot.get_updates()

    assert update.message is not None and update.message.from_user is not None
    assert update.message.from_user.username == "ana"
    [entity] = update.message.entities
    assert (entity.type, entity.offset, entity.length) == ("bot_command", 0, 7)


async def test_edited_text_arrives_as_edited_message(fake: FakeTelegram, bot: Bot) -> None:
    fake.push_text(-500, 7, "fixed typo", chat_type="group", edited=True)

    [update] = await bot.get_updates()

    assert update.message is None
    assert update.edited_message is not None and update.edited_message.chat.type == "group"


async def test_text_of_4096_characters_after_parsing_is_accepted(
    fake: FakeTelegram, bot: Bot
) -> None:
    await bot.send_message(CHAT, "<b>" + "a" * 4096 + "</b>", parse_mode=ParseMode.HTML)
    await bot.send_message(CHAT, "&amp;" * 4096, parse_mode=ParseMode.HTML)

    texts = [m["text"] for m in fake.sent_messages(CHAT)]
    assert texts == ["a" * 4096, "&" * 4096]


async def test_text_over_4096_characters_is_too_long(fake: FakeTelegram, bot: Bot) -> None:
    with pytest.raises(BadRequest, match=r"(?i)message is too long"):
        await bot.send_message(CHAT, "a" * 4097)
    with pytest.raises(BadRequest, match=r"(?i)message text is empty"):
        await bot.send_message(CHAT, "<b> </b>", parse_mode=ParseMode.HTML)
    assert fake.sent_messages() == []


@pytest.mark.parametrize(
    "html",
    ["<b>unclosed", "1 < 2", "<foo>x</foo>", "<b>x</i>", "</b>", '<span class="x">y</span>'],
)
async def test_invalid_html_is_a_bad_request(bot: Bot, html: str) -> None:
    with pytest.raises(BadRequest, match=r"(?i)can't parse entities"):
        await bot.send_message(CHAT, html, parse_mode=ParseMode.HTML)


async def test_supported_html_becomes_entities(fake: FakeTelegram, bot: Bot) -> None:
    html = (
        '<b>bold</b> <a href="https://example.org/?a=1&amp;b=2">link</a> '
        '<pre><code class="language-python">x &lt; 1</code></pre> <tg-spoiler>s</tg-spoiler>'
    )
    message = await bot.send_message(CHAT, html, parse_mode=ParseMode.HTML)

    assert message.text == "bold link x < 1 s"
    kinds = [(e.type, e.offset, e.length) for e in message.entities]
    assert kinds == [("bold", 0, 4), ("text_link", 5, 4), ("pre", 10, 5), ("spoiler", 16, 1)]
    assert message.entities[1].url == "https://example.org/?a=1&b=2"
    assert message.entities[2].language == "python"


async def test_editing_to_the_same_text_is_message_not_modified(
    fake: FakeTelegram, bot: Bot
) -> None:
    sent = await bot.send_message(CHAT, "Using search…")

    with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
        await bot.edit_message_text("Using search…", CHAT, sent.message_id)
    await bot.edit_message_text("Done.", CHAT, sent.message_id)

    [message] = fake.sent_messages(CHAT)
    assert message["text"] == "Done."
    assert "edit_date" in message


async def test_edit_without_markup_removes_the_keyboard(fake: FakeTelegram, bot: Bot) -> None:
    sent = await bot.send_message(CHAT, "Approve?", reply_markup=keyboard("a:1"))

    await bot.edit_message_text("Approved", CHAT, sent.message_id)

    assert "reply_markup" not in fake.sent_messages(CHAT)[0]
    with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
        await bot.edit_message_reply_markup(CHAT, sent.message_id)


async def test_deleted_or_unknown_message_cannot_be_edited(fake: FakeTelegram, bot: Bot) -> None:
    sent = await bot.send_message(CHAT, "status")
    await bot.delete_message(CHAT, sent.message_id)

    with pytest.raises(BadRequest, match=r"(?i)message to edit not found"):
        await bot.edit_message_text("x", CHAT, sent.message_id)
    with pytest.raises(BadRequest, match=r"(?i)message to edit not found"):
        await bot.edit_message_text("x", CHAT, 999)
    assert fake.visible_messages(CHAT) == []
    assert len(fake.sent_messages(CHAT)) == 1


async def test_flood_control_surfaces_as_retry_after(
    fake: FakeTelegram, bot: Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")  # PTB 22 warns when retry_after is read as int
    fake.flood("sendMessage", times=1, retry_after=2)

    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(CHAT, "one")
    await bot.send_message(CHAT, "two")

    assert caught.value.retry_after == dt.timedelta(seconds=2)
    assert [r.method for r in fake.flood_rejections] == ["sendMessage"]
    assert [m["text"] for m in fake.sent_messages(CHAT)] == ["two"]


async def test_callback_data_over_64_bytes_is_rejected(fake: FakeTelegram, bot: Bot) -> None:
    await bot.send_message(CHAT, "fits", reply_markup=keyboard("é" * 32))  # 64 bytes

    with pytest.raises(BadRequest, match=r"(?i)button_data_invalid"):
        await bot.send_message(CHAT, "too long", reply_markup=keyboard("é" * 32 + "x"))
    assert [m["text"] for m in fake.sent_messages(CHAT)] == ["fits"]


async def test_button_press_arrives_and_is_answered_once(fake: FakeTelegram, bot: Bot) -> None:
    sent = await bot.send_message(CHAT, "Approve?", reply_markup=keyboard("approve:7"))
    fake.push_callback(CHAT, CHAT, sent.message_id, "approve:7")

    [update] = await bot.get_updates()
    query = update.callback_query
    assert query is not None and query.data == "approve:7"
    assert query.message is not None and query.message.message_id == sent.message_id

    await query.answer("Approved")
    with pytest.raises(BadRequest, match=r"(?i)query is too old"):
        await query.answer("again")
    [answered] = fake.answered_callbacks
    assert (answered.callback_query_id, answered.text) == (query.id, "Approved")
    assert answered.seconds_after_push < 5


async def test_commands_and_chat_actions_are_recorded(fake: FakeTelegram, bot: Bot) -> None:
    await bot.set_my_commands([("status", "What Palui is doing"), ("stop", "Stop the turn")])
    await bot.send_chat_action(CHAT, "typing")

    assert [c.command for c in await bot.get_my_commands()] == ["status", "stop"]
    assert fake.commands[0] == {"command": "status", "description": "What Palui is doing"}
    assert fake.chat_actions == [(CHAT, "typing")]
    with pytest.raises(BadRequest, match=r"(?i)bot_command_invalid"):
        await bot.set_my_commands([("Bad-Name", "x")])


async def test_wait_for_messages_returns_once_enough_were_sent(
    fake: FakeTelegram, bot: Bot
) -> None:
    waiting = asyncio.create_task(fake.wait_for_messages(CHAT, count=2, timeout=5))
    await bot.send_message(CHAT, "one")
    await bot.send_message(CHAT, "two")

    assert [m["text"] for m in await waiting] == ["one", "two"]
    with pytest.raises(TimeoutError, match="3 messages to chat"):
        await fake.wait_for_messages(CHAT, count=3, timeout=0.05)


async def test_wait_for_request_matches_params(fake: FakeTelegram, bot: Bot) -> None:
    await bot.send_message(CHAT, "one")
    await bot.send_message(CHAT + 1, "other")

    found = await fake.wait_for_request("sendMessage", lambda p: p["chat_id"] == CHAT + 1)

    assert found.params["text"] == "other"


async def test_webhook_blocks_get_updates_until_deleted(fake: FakeTelegram, bot: Bot) -> None:
    fake.push_text(CHAT, CHAT, "queued")
    await bot.set_webhook("https://palui.example/telegram")

    with pytest.raises(Conflict, match="webhook is active"):
        await bot.get_updates()
    assert (await bot.get_webhook_info()).pending_update_count == 1

    await bot.delete_webhook(drop_pending_updates=True)
    assert await bot.get_updates() == ()


async def test_wrong_token_is_unauthorized(fake: FakeTelegram) -> None:
    async with FakeTelegram(token="42:wrong") as other:
        bot = Bot(fake.token, base_url=other.base_url)
        try:
            with pytest.raises(InvalidToken, match="Unauthorized"):
                await bot.get_me()
        finally:
            await bot.request.shutdown()


async def test_unknown_method_is_not_found(fake: FakeTelegram, bot: Bot) -> None:
    with pytest.raises(InvalidToken, match="Not Found"):
        await bot._post("noSuchMethod")


async def test_ptb_application_polls_replies_and_confirms_on_stop(fake: FakeTelegram) -> None:
    async def echo(update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None
        await update.effective_message.reply_text(f"echo: {update.effective_message.text}")

    app = Application.builder().token(fake.token).base_url(fake.base_url).build()
    app.add_handler(CommandHandler("status", echo))
    app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, echo))
    command = fake.push_text(CHAT, CHAT, "/status")
    text = fake.push_text(CHAT, CHAT, "hi")

    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(poll_interval=0, timeout=5)
        replies = await fake.wait_for_messages(CHAT, count=2)
        await app.updater.stop()
        await app.stop()

    assert [m["text"] for m in replies] == ["echo: /status", "echo: hi"]
    assert fake.is_confirmed(command) and fake.is_confirmed(text)
    assert fake.delivered_count(text) == 1
