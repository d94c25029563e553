"""A slow answer streams as a native draft in a private chat and is sent once; in a group, or
where Telegram refuses drafts, it falls back to the edited preview. A draft is not a message:
a turn that dies mid-answer leaves nothing in the chat."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

import palui.channels.telegram as telegram_channel
from palui.channels.ratelimit import SendLimits, SendRateLimiter
from palui.channels.telegram import TelegramChannel
from palui.delivery.draft import DraftReply
from palui.delivery.preview import StreamingReply
from palui.delivery.streams import reply_stream
from palui.errors import DraftRefused
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script
from tests.fakes.telegram_api import FakeTelegram

ANSWER = "**Plan**: " + " ".join(f"step{n}" for n in range(40))
GROUP = -500


def calls(fake: FakeTelegram, method: str) -> list[dict]:
    return [r.params for r in fake.requests if r.method == method]


@pytest.fixture
def no_first_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telegram_channel, "FIRST_PREVIEW_AFTER_S", 0.0)


async def test_a_slow_answer_in_a_private_chat_is_drafts_then_one_send_message(
    start_palui, fake_telegram, fake_model, no_first_hold
) -> None:
    fake_telegram.drafts_supported = True
    slow = asyncio.Event()
    fake_model.queue(Script(text=ANSWER, gate=slow))
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "plan my day")
    draft = await fake_telegram.wait_for_request("sendMessageDraft")
    assert draft.params["text"].startswith("Plan: step0")  # plain while it grows
    assert fake_telegram.sent_messages(OWNER_CHAT) == []  # a draft is not a message
    slow.set()
    [reply] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    assert reply["text"] == ANSWER.replace("**", "")
    [sent] = calls(fake_telegram, "sendMessage")
    assert sent["parse_mode"] == "HTML" and sent["text"].startswith("<b>Plan</b>")
    assert calls(fake_telegram, "editMessageText") == []
    drafts = fake_telegram.drafts.drafts
    assert drafts and {d.draft_id for d in drafts} == {drafts[0].draft_id}  # one draft, grown
    assert fake_telegram.drafts.showing == {}  # the message replaced it


async def test_a_turn_that_dies_mid_draft_leaves_no_message_behind(
    start_palui, fake_telegram, fake_model, no_first_hold
) -> None:
    fake_telegram.drafts_supported = True
    fake_model.queue(Script(text=ANSWER, hang=True))
    handle = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "plan my day")
    await fake_telegram.wait_for_request("sendMessageDraft")
    handle.stop.set()  # shut down mid-answer: the turn is left to run again
    await asyncio.wait_for(handle.task, 30)
    assert fake_telegram.sent_messages(OWNER_CHAT) == []


@pytest.fixture
async def channel() -> AsyncIterator[tuple[TelegramChannel, FakeTelegram]]:
    async with FakeTelegram() as fake:
        fast = SendRateLimiter(SendLimits(per_chat_interval=0.0))
        tg = TelegramChannel(fake.token, fake.url, limiter=fast, first_preview_after_s=0.0)
        await tg.initialize()
        try:
            yield tg, fake
        finally:
            await tg.close()


async def test_in_a_group_the_answer_is_a_preview_then_an_edit(channel) -> None:
    tg, fake = channel
    fake.drafts_supported = True  # Telegram has drafts, but not for groups
    stream = reply_stream(tg, GROUP)
    assert stream is not None and not isinstance(stream, DraftReply)
    await stream.push("a preview that is long enough to show")
    preview = await fake.wait_for_request("sendMessage")
    assert "parse_mode" not in preview.params
    await stream.close()
    assert stream.preview_message_id is not None
    [part] = tg.render("**the answer**")
    await tg.edit_part(GROUP, stream.preview_message_id, part)  # what the outbox does
    assert [m["text"] for m in fake.sent_messages(GROUP)] == ["the answer"]
    assert calls(fake, "sendMessageDraft") == []


async def test_a_draft_telegram_refuses_falls_back_to_edits_and_later_answers_skip_drafts(
    channel,
) -> None:
    tg, fake = channel  # drafts not supported: sendMessageDraft is 404, as on an older Bot API
    stream = reply_stream(tg, OWNER_CHAT)
    assert isinstance(stream, DraftReply)
    await stream.push("the first words of a long answer")
    preview = await fake.wait_for_request("sendMessage")
    assert preview.params["text"] == "the first words of a long answer"  # the text so far
    await stream.close()
    assert not stream.drafting and stream.preview_message_id is not None
    assert len(calls(fake, "sendMessageDraft")) == 1
    assert not isinstance(reply_stream(tg, OWNER_CHAT), DraftReply)  # remembered


class Recorder:
    def __init__(self) -> None:
        self.drafts: list[str] = []
        self.sent: list[tuple[str, bool]] = []
        self.edits: list[tuple[int, str, bool]] = []
        self.refuse = False
        self.drafted = asyncio.Event()

    async def send_draft(self, text: str) -> None:
        if self.refuse:
            raise DraftRefused("TEXTDRAFT_PEER_INVALID")
        self.drafts.append(text)
        self.drafted.set()

    async def send(self, text: str, html: bool) -> int:
        self.sent.append((text, html))
        return 100 + len(self.sent)

    async def edit(self, message_id: int, text: str, html: bool) -> None:
        self.edits.append((message_id, text, html))


async def test_finish_after_drafts_sends_the_formatted_answer_as_a_new_message() -> None:
    rec = Recorder()
    reply = DraftReply(rec.send_draft, StreamingReply(rec.send, rec.edit), min_interval_s=0.0)
    await reply.push("**bold** start of it")
    await asyncio.wait_for(rec.drafted.wait(), 10)
    await reply.finish("**bold** start of it, and the end")
    assert rec.drafts[0] == "bold start of it"
    assert rec.sent == [("<b>bold</b> start of it, and the end", True)]
    assert rec.edits == [] and reply.preview_message_id is None


async def test_adopting_a_left_preview_edits_it_and_makes_no_draft() -> None:
    rec = Recorder()
    reply = DraftReply(rec.send_draft, StreamingReply(rec.send, rec.edit), min_interval_s=0.0)
    reply.adopt(77)
    await reply.push("the new answer, long enough to preview")
    await reply.close()
    assert rec.drafts == [] and reply.preview_message_id == 77 and reply.adopted


# -- the fake Bot API behaves like Telegram -----------------------------------------------------


async def test_the_fake_drafts_like_telegram_private_chats_only_and_not_as_messages() -> None:
    from telegram import Bot
    from telegram.error import BadRequest, InvalidToken

    async with FakeTelegram() as fake, Bot(fake.token, base_url=fake.base_url) as bot:
        with pytest.raises(InvalidToken):  # 404: an older Bot API knows no drafts
            await bot.send_message_draft(OWNER_CHAT, 1, "x")
        fake.drafts_supported = True
        assert await bot.send_message_draft(OWNER_CHAT, 1, "hello")
        with pytest.raises(BadRequest, match=r"(?i)textdraft_peer_invalid"):
            await bot.send_message_draft(GROUP, 1, "hello")
        with pytest.raises(BadRequest, match="non-zero"):
            await bot.send_message_draft(OWNER_CHAT, 0, "hello")
        with pytest.raises(BadRequest, match="too long"):
            await bot.send_message_draft(OWNER_CHAT, 1, "x" * 4097)
        assert fake.sent_messages(OWNER_CHAT) == []
        assert fake.drafts.showing[OWNER_CHAT].text == "hello"
        await bot.send_message(OWNER_CHAT, "the answer")
        assert fake.drafts.showing == {}


async def test_the_fake_keeps_telegrams_limits_when_asked_but_not_for_actions_or_drafts() -> None:
    from telegram import Bot
    from telegram.error import RetryAfter

    async with FakeTelegram() as fake:
        fake.drafts_supported = True
        fake.keep_limits()
        async with Bot(fake.token, base_url=fake.base_url) as bot:
            await bot.send_message(OWNER_CHAT, "one")
            await bot.send_chat_action(OWNER_CHAT, "typing")
            await bot.send_message_draft(OWNER_CHAT, 1, "drafting")
            with pytest.raises(RetryAfter):
                await bot.send_message(OWNER_CHAT, "two, too soon")
            await bot.send_message(OWNER_CHAT + 1, "another chat is not held")
        assert [r.method for r in fake.limit_rejections] == ["sendMessage"]
