"""What comes in from the chat: commands run only from new messages and only when addressed to
this bot (through the fake Bot API: `edited_message` and `/cmd@name` are Telegram's), and
strangers' refusals never hold up the owner (in this process)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from palui.chat.background import Background
from palui.chat.strangers import REFUSALS_PER_MINUTE, StrangerRefusals
from palui.config import Settings
from palui.db.models import InboxUpdate, StrangerNotice
from palui.domain import ChatUser, Inbound, InboxStatus
from palui.interact.commands import not_for_me_text
from tests import toolkit
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.memory_channel import MemoryChannel, in_memory_settings, running_palui

EDITED = "don't re-run edited messages"
FRESH = "fresh conversation"


def roles_and_contents(request: Any) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in request.messages]


async def _plan_told(start_palui: Any, fake_telegram: Any, fake_model: Any) -> None:
    """A running Palui whose session holds one exchange."""
    fake_model.reply("noted")
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "my plan is to fly")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)


async def _next_turn_sees(fake_telegram: Any, fake_model: Any, count: int) -> list[tuple]:
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "what was my plan?")
    await fake_telegram.wait_for_messages(OWNER_CHAT, count)
    return roles_and_contents(fake_model.requests[-1])


# -- commands ----------------------------------------------------------------------------------


async def test_an_edited_new_does_not_reset_the_session(
    start_palui, fake_telegram, fake_model
) -> None:
    await _plan_told(start_palui, fake_telegram, fake_model)
    status = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/status")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    fake_telegram.push_edit(status, "/new")  # the person edits their /status into /new

    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    assert EDITED in replies[2]["text"] and FRESH not in replies[2]["text"]
    history = await _next_turn_sees(fake_telegram, fake_model, 4)
    assert ("user", "my plan is to fly") in history  # the session was not reset
    assert len(fake_model.requests) == 2  # neither the command nor its edit reached the model


async def test_a_command_for_another_bot_does_not_run(
    start_palui, fake_telegram, fake_model
) -> None:
    await _plan_told(start_palui, fake_telegram, fake_model)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/new@SomeOtherBot")

    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert "That command is for @SomeOtherBot" in replies[1]["text"]
    assert FRESH not in replies[1]["text"]
    history = await _next_turn_sees(fake_telegram, fake_model, 3)
    assert ("user", "my plan is to fly") in history
    assert ("user", "/new@SomeOtherBot") not in history  # never sent to the model
    assert len(fake_model.requests) == 2


async def test_a_command_addressed_to_this_bot_runs_whatever_the_case(
    start_palui, fake_telegram, fake_model
) -> None:
    await _plan_told(start_palui, fake_telegram, fake_model)
    assert fake_telegram.bot_user["username"] == "palui_test_bot"
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/new@Palui_Test_Bot")

    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert FRESH in replies[1]["text"]
    history = await _next_turn_sees(fake_telegram, fake_model, 3)
    assert history[1:] == [("user", "what was my plan?")]


def _inbound(text: str, **fields: Any) -> Inbound:
    return Inbound(1, 1, ChatUser(1), text, **fields)


def test_only_new_messages_addressed_to_this_bot_are_commands() -> None:
    assert _inbound("/new").command == "new"
    assert _inbound("/New@MyBot now", bot_username="mybot").command == "new"
    assert _inbound("/new", edited=True).command is None
    assert _inbound("/new", edited=True).addressed_elsewhere is None  # an edit: a note, no run
    other = _inbound("/new@SomeOtherBot", bot_username="mybot")
    assert (other.command, other.addressed_elsewhere) == (None, "SomeOtherBot")
    # A channel that doesn't know the bot's name: any `@name` may be someone else's.
    assert _inbound("/new@mybot").command is None
    assert _inbound("/home/me").command is None and _inbound("/home/me").addressed_elsewhere is None


async def test_a_command_for_another_bot_gets_a_note_in_private_and_silence_in_a_group(
    settings: Settings,
) -> None:
    async with running_palui(settings, toolkit.ScriptedModel()) as (app, chat):
        await chat.send("/new@SomeOtherBot")
        assert chat.texts() == [not_for_me_text("SomeOtherBot")]
        group = dataclasses.replace(chat.inbound(text="/new@SomeOtherBot"), chat_id=-100123)
        await chat.push(group)
        assert chat.texts(-100123) == [] and len(chat.parts) == 1
        async with app.db.session() as s:  # both are handled, neither waits for a turn
            statuses = list(await s.scalars(select(InboxUpdate.status)))
        assert statuses == [InboxStatus.DONE, InboxStatus.DONE]


# -- strangers ---------------------------------------------------------------------------------


@dataclasses.dataclass
class GatedChannel(MemoryChannel):
    """Refusals to strangers wait at a gate the test opens (a slow or flooded Telegram)."""

    gate: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    async def send_notice(self, chat_id: int, text: str) -> None:
        if chat_id != self.chat_id:
            await self.gate.wait()
        await super().send_notice(chat_id, text)


def stranger(chat: MemoryChannel, user_id: int, text: str = "let me in") -> Inbound:
    return dataclasses.replace(chat.inbound(text=text, user_id=user_id), chat_id=user_id)


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


async def test_a_burst_of_strangers_does_not_delay_the_owner_and_refusals_stay_in_budget(
    settings: Settings,
) -> None:
    channel = GatedChannel()
    model = toolkit.ScriptedModel([toolkit.answer("Hello, owner!")])
    async with running_palui(settings, model, channel) as (app, chat):
        async with asyncio.timeout(60):  # a refusal sent inside the intake would hang here
            for n in range(50):
                assert await app.chats.accept(stranger(chat, 5000 + n)) is False
            await chat.send("hi")
        assert chat.texts() == ["Hello, owner!"]
        assert chat.notices == []  # the owner was answered while every refusal still waited

        channel.gate.set()
        await app.chats.inbox.refusals.idle()
        refused = [to for to, _ in chat.notices]
        assert refused == [5000 + n for n in range(REFUSALS_PER_MINUTE)]
        assert all("private assistant" in text for _, text in chat.notices)
        async with app.db.session() as s:  # every attempt is still counted (the audit line)
            assert await s.scalar(select(func.count()).select_from(StrangerNotice)) == 50


async def test_each_stranger_is_refused_once_a_day_within_a_budget_per_minute(store) -> None:
    channel, background = MemoryChannel(), Background()
    clock = [0.0]
    refusals = StrangerRefusals(
        store, channel, background, now=lambda: datetime.now(UTC),
        per_minute=3, clock=lambda: clock[0],
    )  # fmt: skip
    try:
        for user_id in (1, 1, 2, 3, 4):
            refusals.offer(stranger(channel, user_id))
        await refusals.idle()
        assert [to for to, _ in channel.notices] == [1, 2, 3]  # 1 once; 4 over the budget

        clock[0] = 61.0  # a minute later the budget has room again, but not for 4 today
        for user_id in (4, 5):
            refusals.offer(stranger(channel, user_id))
        await refusals.idle()
        assert [to for to, _ in channel.notices] == [1, 2, 3, 5]
    finally:
        await background.close()
