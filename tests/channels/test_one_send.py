"""A turn whose answer is complete before its first preview would go out makes ONE send: the
formatted answer, with no preview, no edit and no draft. And "typing" costs no send slot."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import palui.channels.telegram as telegram_channel
from palui.channels.ratelimit import SendRateLimiter
from palui.channels.telegram import TelegramChannel
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.telegram_api import FakeTelegram

MESSAGES = ("sendMessage", "editMessageText", "sendMessageDraft")


def calls(fake: FakeTelegram, method: str) -> int:
    return sum(r.method == method for r in fake.requests)


@pytest.fixture
def long_first_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    # The answer below is complete within milliseconds; a hold no machine is slow enough to
    # exceed makes this a test of the path (answer done before the first preview), not of speed.
    monkeypatch.setattr(telegram_channel, "FIRST_PREVIEW_AFTER_S", 60.0)


@pytest.mark.parametrize("drafts", [True, False], ids=["drafts", "no-drafts"])
async def test_an_answer_complete_at_once_is_one_send_message_and_no_edit(
    start_palui, fake_telegram, fake_model, long_first_hold, drafts: bool
) -> None:
    fake_telegram.drafts_supported = drafts
    fake_model.reply("**Done**: the whole answer, long enough to be previewed if it were slow.")
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    [reply] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    assert reply["text"].startswith("Done: the whole answer")
    request = await fake_telegram.wait_for_request("sendMessage")
    assert request.params["parse_mode"] == "HTML"  # the formatted answer, not a plain preview
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "again")  # the first turn is over by its end
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert [calls(fake_telegram, m) for m in MESSAGES] == [2, 0, 0]


class NoWaitAllowed:
    """A limiter clock that never moves: any wait for a slot is seen, none really happens."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def clock(self) -> float:
        return 1000.0

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        raise AssertionError(f"a send waited {seconds} s for its slot")


@pytest.fixture
async def channel() -> AsyncIterator[tuple[TelegramChannel, FakeTelegram, NoWaitAllowed]]:
    pace = NoWaitAllowed()
    async with FakeTelegram() as fake:
        limiter = SendRateLimiter(clock=pace.clock, sleep=pace.sleep)
        tg = TelegramChannel(fake.token, fake.url, limiter=limiter)
        await tg.initialize()
        try:
            yield tg, fake, pace
        finally:
            await tg.close()


async def test_typing_takes_no_send_slot_so_the_answer_after_it_does_not_wait(channel) -> None:
    tg, fake, pace = channel
    await tg.typing(OWNER_CHAT)
    await tg.typing(OWNER_CHAT)
    [part] = tg.render("the answer")
    await tg.send_part(OWNER_CHAT, part)  # the chat's first message: its slot is free
    assert pace.waits == []
    assert fake.chat_actions == [(OWNER_CHAT, "typing")] * 2
    assert [m["text"] for m in fake.sent_messages(OWNER_CHAT)] == ["the answer"]
