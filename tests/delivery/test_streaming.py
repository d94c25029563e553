"""A streamed answer grows in one message and ends as the formatted answer, shown once.

StreamingReply is driven through the real python-telegram-bot `Bot` against the fake Bot API;
time is a fake clock, so rate limits are checked without real waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from telegram import Bot
from telegram.constants import ParseMode
from telegram.error import BadRequest, RetryAfter

from palui.channels.formatting import split_for_telegram
from palui.delivery.preview import (
    StreamingReply,
    StreamState,
)
from palui.errors import ChannelError, MarkupRejected, MessageNotModified
from palui.ports import Part
from tests.fakes.telegram_api import FakeTelegram

CHAT = 1001


class FakeClock:
    """Time moves only by `advance`; `sleep` returns once the clock reaches its end.

    With `auto=True`, `sleep` moves the clock itself, for tests where timing doesn't matter.
    """

    def __init__(self, *, auto: bool = False) -> None:
        self.now = 0.0
        self._auto = auto
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []
        self._changed = asyncio.Event()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        if self._auto:
            self.now += max(seconds, 0.0)
            await asyncio.sleep(0)
            return
        wake = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.now + seconds, wake))
        self._changed.set()
        try:
            await wake
        finally:
            self._sleepers = [s for s in self._sleepers if s[1] is not wake]

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for until, wake in self._sleepers:
            if until <= self.now and not wake.done():
                wake.set_result(None)
        self._sleepers = [s for s in self._sleepers if not s[1].done()]

    async def wait_for_sleeper(self) -> None:
        async with asyncio.timeout(5):
            while not self._sleepers:
                self._changed.clear()
                await self._changed.wait()


class TelegramCalls:
    """`send`/`edit` for StreamingReply over a real Bot, translated as TelegramChannel would:
    429s waited out (on the test's clock) unless `wait_out_floods` is off, Bad Requests mapped
    to the streaming errors."""

    def __init__(
        self, bot: Bot, clock: FakeClock, *, wait_out_floods: bool = True, chat_id: int = CHAT
    ) -> None:
        self.bot = bot
        self.clock = clock
        self.wait_out_floods = wait_out_floods
        self.chat_id = chat_id
        self.refused: list[str] = []  # Bad Requests other than "message is not modified"
        self.edit_times: list[float] = []

    async def send(self, text: str, html: bool) -> int:
        message = await self._call(
            self.bot.send_message, self.chat_id, text, parse_mode=ParseMode.HTML if html else None
        )
        return int(message.message_id)

    async def edit(self, message_id: int, text: str, html: bool) -> None:
        self.edit_times.append(self.clock())
        await self._call(
            self.bot.edit_message_text,
            text,
            chat_id=self.chat_id,
            message_id=message_id,
            parse_mode=ParseMode.HTML if html else None,
        )

    async def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        while True:
            try:
                return await method(*args, **kwargs)
            except RetryAfter as exc:
                if not self.wait_out_floods:
                    raise ChannelError(exc.message) from exc
                await self.clock.sleep(_seconds(exc.retry_after))
            except BadRequest as exc:
                if "not modified" in exc.message:
                    raise MessageNotModified(exc.message) from exc
                self.refused.append(exc.message)
                if "parse" in exc.message.lower():
                    raise MarkupRejected(exc.message) from exc
                raise ChannelError(exc.message) from exc


def _seconds(value: Any) -> float:
    return value.total_seconds() if hasattr(value, "total_seconds") else float(value)


@pytest.fixture
async def bot(fake_telegram: FakeTelegram) -> AsyncIterator[Bot]:
    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url) as bot:
        yield bot


def requests(fake: FakeTelegram, method: str) -> list[dict[str, Any]]:
    return [r.params for r in fake.requests if r.method.lower() == method.lower()]


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.sent_messages(CHAT)]


def streaming(calls: TelegramCalls, **options: Any) -> StreamingReply:
    return StreamingReply(
        calls.send, calls.edit, clock=calls.clock, sleep=calls.clock.sleep, **options
    )


async def shows(fake: FakeTelegram, text: str, *, first: bool = False) -> None:
    """Wait until the preview was sent (first) or edited to `text`."""
    method = "sendMessage" if first else "editMessageText"
    await fake.wait_for_request(method, lambda p: p["text"] == text, timeout=5)


async def test_answer_grows_in_one_message(fake_telegram: FakeTelegram, bot: Bot) -> None:
    calls = TelegramCalls(bot, FakeClock(auto=True))
    stream = streaming(calls)

    await stream.push("The weather today is ")
    await shows(fake_telegram, "The weather today is", first=True)
    await stream.push("sunny, with a light breeze")
    await shows(fake_telegram, "The weather today is sunny, with a light breeze")
    await stream.push(" from the west.")
    await shows(fake_telegram, stream.text)
    await stream.finish("The weather today is **sunny**, with a light breeze from the west.")

    [message] = fake_telegram.sent_messages(CHAT)
    assert message["text"] == "The weather today is sunny, with a light breeze from the west."
    assert [e["type"] for e in message["entities"]] == ["bold"]
    assert stream.message_ids == (message["message_id"],) == (stream.preview_message_id,)
    assert {p["message_id"] for p in requests(fake_telegram, "editMessageText")} == {
        message["message_id"]
    }
    assert [p.get("parse_mode") for p in requests(fake_telegram, "sendMessage")] == [None]
    assert requests(fake_telegram, "editMessageText")[-1]["parse_mode"] == "HTML"
    assert stream.state is StreamState.FINISHED


async def test_first_message_waits_for_a_few_words_or_a_finished_line(
    fake_telegram: FakeTelegram, bot: Bot
) -> None:
    stream = streaming(TelegramCalls(bot, FakeClock(auto=True)))

    await stream.push("Sure")
    await stream.push("!\n")
    assert requests(fake_telegram, "sendMessage") == []  # nothing was even scheduled
    assert stream.state is StreamState.COLLECTING

    await stream.push("Here")
    await shows(fake_telegram, "Sure!\nHere", first=True)
    await stream.abort()


async def test_short_answer_goes_out_once_formatted_without_a_preview(
    fake_telegram: FakeTelegram, bot: Bot
) -> None:
    stream = streaming(TelegramCalls(bot, FakeClock(auto=True)))

    await stream.push("**Done.**")
    await stream.finish("**Done.**")

    [message] = fake_telegram.sent_messages(CHAT)
    assert message["text"] == "Done."
    assert [e["type"] for e in message["entities"]] == ["bold"]
    assert [p["parse_mode"] for p in requests(fake_telegram, "sendMessage")] == ["HTML"]
    assert requests(fake_telegram, "editMessageText") == []
    assert stream.preview_message_id is None
    assert stream.message_ids == (message["message_id"],)


async def test_many_deltas_within_an_interval_make_one_edit_with_the_latest_text(
    fake_telegram: FakeTelegram, bot: Bot
) -> None:
    clock = FakeClock()
    calls = TelegramCalls(bot, clock)
    stream = streaming(calls)

    await stream.push("A first sentence, long enough to show.")
    await shows(fake_telegram, stream.text, first=True)
    for i in range(50):
        await stream.push(f" word{i}")
    await clock.wait_for_sleeper()  # the preview waits for its next turn; the pushes did not
    assert requests(fake_telegram, "editMessageText") == []

    clock.advance(1.0)
    await shows(fake_telegram, stream.text)
    for i in range(50, 100):
        await stream.push(f" word{i}")
    await clock.wait_for_sleeper()
    assert len(requests(fake_telegram, "editMessageText")) == 1

    clock.advance(1.0)
    await shows(fake_telegram, stream.text)
    assert calls.edit_times == [1.0, 2.0]

    await stream.push(" and the end.")
    await clock.wait_for_sleeper()
    await stream.finish(stream.text)  # doesn't wait out the preview's turn
    assert texts(fake_telegram) == [stream.text]
    assert calls.edit_times == [1.0, 2.0, 2.0]


async def test_push_never_waits_for_telegram_and_finish_waits_for_the_preview_in_flight(
    fake_telegram: FakeTelegram, bot: Bot
) -> None:
    calls = TelegramCalls(bot, FakeClock(auto=True))
    held = asyncio.Event()
    release = asyncio.Event()

    async def slow_send(text: str, html: bool) -> int:
        held.set()
        await release.wait()
        return await calls.send(text, html)

    stream = StreamingReply(slow_send, calls.edit, clock=calls.clock, sleep=calls.clock.sleep)
    await stream.push("The preview is on its way to Telegram")
    await asyncio.wait_for(held.wait(), 5)
    for i in range(100):
        await stream.push(f" {i}")  # returns although Telegram hasn't answered

    # Runs once finish() is suspended waiting for the preview in flight.
    asyncio.get_running_loop().call_soon(release.set)
    await stream.finish("The final answer.")

    [message] = fake_telegram.sent_messages(CHAT)
    assert message["text"] == "The final answer."
    assert stream.message_ids == (message["message_id"],)


@pytest.mark.parametrize("streamed", [True, False], ids=["after-preview", "no-preview"])
async def test_long_answer_is_the_preview_then_new_messages_in_order(
    fake_telegram: FakeTelegram, bot: Bot, streamed: bool
) -> None:
    answer = "\n\n".join(
        f"Paragraph {i}: " + " ".join(f"word{i}-{w}" for w in range(60)) for i in range(20)
    )
    stream = streaming(TelegramCalls(bot, FakeClock(auto=True)))

    if streamed:
        for start in range(0, len(answer), 500):
            await stream.push(answer[start : start + 500])
        await fake_telegram.wait_for_messages(CHAT, 1)
    await stream.finish(answer)

    messages = fake_telegram.sent_messages(CHAT)
    chunks = split_for_telegram(answer)
    assert len(chunks) >= 3
    assert [m["text"] for m in messages] == [c.plain for c in chunks]
    assert "\n\n".join(m["text"] for m in messages) == answer
    assert all(len(m["text"]) <= 4096 for m in messages)
    assert stream.message_ids == tuple(m["message_id"] for m in messages)
    if streamed:
        assert messages[0]["message_id"] == stream.preview_message_id
        assert requests(fake_telegram, "editMessageText")[-1]["parse_mode"] == "HTML"
    html_sends = [p for p in requests(fake_telegram, "sendMessage") if p.get("parse_mode")]
    assert len(html_sends) == len(chunks) - streamed


async def test_preview_longer_than_one_message_is_cut_and_never_refused(
    fake_telegram: FakeTelegram, bot: Bot
) -> None:
    calls = TelegramCalls(bot, FakeClock(auto=True))
    stream = streaming(calls)
    answer = " ".join(f"🙂 word{i}" for i in range(900))  # ~9,000 UTF-16 units

    await stream.push(answer[:3000])
    await fake_telegram.wait_for_messages(CHAT, 1)
    await stream.push(answer[3000:])
    request = await fake_telegram.wait_for_request(
        "editMessageText", lambda p: p["text"].endswith(" …")
    )

    preview = request.params["text"]
    assert len(preview.encode("utf-16-le")) // 2 <= 4096
    assert answer.startswith(preview.removesuffix(" …"))
    await stream.finish(answer)
    assert calls.refused == []
    assert " ".join(texts(fake_telegram)) == answer


async def test_a_429_on_a_preview_edit_is_waited_out_and_the_answer_lands(
    fake_telegram: FakeTelegram, bot: Bot
) -> None:
    stream = streaming(TelegramCalls(bot, FakeClock(auto=True)))
    await stream.push("Looking at your notes now, ")
    await fake_telegram.wait_for_messages(CHAT, 1)

    fake_telegram.flood("editMessageText", times=1, retry_after=3)
    await stream.push("I found three.")
    await fake_telegram.wait_for_request("editMessageText")
    await stream.finish("Looking at your notes now, I found **three**.")

    assert len(fake_telegram.flood_rejections) == 1
    assert texts(fake_telegram) == ["Looking at your notes now, I found three."]


async def test_when_the_preview_cant_be_edited_the_answer_arrives_as_new_messages(
    fake_telegram: FakeTelegram, bot: Bot
) -> None:
    stream = streaming(TelegramCalls(bot, FakeClock(auto=True), wait_out_floods=False))
    await stream.push("Looking at your notes now, ")
    await fake_telegram.wait_for_messages(CHAT, 1)

    fake_telegram.flood("editMessageText", times=1000)
    await stream.push("I found three.")
    await stream.finish("Looking at your notes now, I found **three**.")

    preview, *answer = fake_telegram.sent_messages(CHAT)
    assert preview["message_id"] == stream.preview_message_id
    assert [m["text"] for m in answer] == ["Looking at your notes now, I found three."]
    assert stream.message_ids == tuple(m["message_id"] for m in answer)


async def test_refused_html_falls_back_to_plain_text(fake_telegram: FakeTelegram, bot: Bot) -> None:
    calls = TelegramCalls(bot, FakeClock(auto=True))
    broken = [Part("<b>first part", "first part"), Part("<i>second part", "second part")]
    stream = streaming(calls, render=lambda _text: broken)
    await stream.push("A preview that is long enough")
    await fake_telegram.wait_for_messages(CHAT, 1)

    await stream.finish("whatever the model said")

    assert texts(fake_telegram) == ["first part", "second part"]
    assert len(calls.refused) == 2
    assert len(stream.message_ids) == 2


async def test_message_not_modified_counts_as_delivered(
    fake_telegram: FakeTelegram, bot: Bot
) -> None:
    calls = TelegramCalls(bot, FakeClock(auto=True))
    stream = streaming(calls)
    answer = "A plain answer with nothing to format."
    await stream.push(answer)
    await shows(fake_telegram, answer, first=True)

    await stream.finish(answer)

    [message] = fake_telegram.sent_messages(CHAT)
    assert stream.message_ids == (message["message_id"],)
    assert len(requests(fake_telegram, "sendMessage")) == 1
    assert len(requests(fake_telegram, "editMessageText")) == 1  # answered "not modified"
    assert calls.refused == []


async def test_abort_leaves_the_partial_text_with_the_note(
    fake_telegram: FakeTelegram, bot: Bot
) -> None:
    clock = FakeClock()
    stream = streaming(TelegramCalls(bot, clock))
    await stream.push("Here is the start of a long answer")
    await fake_telegram.wait_for_messages(CHAT, 1)
    await stream.push(" and a bit more")
    await clock.wait_for_sleeper()  # not shown yet: the preview waits for its turn
    assert stream.state is StreamState.PREVIEWING

    await stream.abort("Stopped.")
    await stream.push(" that came too late")
    await stream.abort("Stopped again.")

    assert texts(fake_telegram) == ["Here is the start of a long answer and a bit more\n\nStopped."]
    assert len(requests(fake_telegram, "editMessageText")) == 1
    assert stream.state is StreamState.ABORTED
    assert stream.message_ids == ()
    with pytest.raises(RuntimeError):
        await stream.finish("too late")


async def test_abort_before_anything_was_shown_sends_nothing(
    fake_telegram: FakeTelegram, bot: Bot
) -> None:
    stream = streaming(TelegramCalls(bot, FakeClock(auto=True)))
    await stream.push("Hmm")

    await stream.abort("Stopped.")

    assert fake_telegram.sent_messages(CHAT) == []
    assert stream.preview_message_id is None
