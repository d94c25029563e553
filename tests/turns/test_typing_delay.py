""" "typing…" shows on a slow turn only: a turn answered before the first chat action is due
sends none (a Bot API request saved per fast turn); a slower one shows it while it runs."""

from __future__ import annotations

import asyncio

import pytest

import palui.turns.drive as drive
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script


@pytest.fixture
def long_typing_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    # The answers below come within milliseconds; a delay no machine is slow enough to exceed
    # makes this a test of the path (answer before the first chat action), not of speed.
    monkeypatch.setattr(drive, "TYPING_AFTER_S", 60.0)


async def test_a_turn_answered_at_once_sends_no_chat_action(
    start_palui, fake_telegram, fake_model, long_typing_delay
) -> None:
    fake_model.queue(Script(text="first"), Script(text="second"))
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "again")  # the first turn is over by its end
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert fake_telegram.chat_actions == []
    assert not any(r.method == "sendChatAction" for r in fake_telegram.requests)


async def test_a_slow_turn_shows_typing_before_its_answer(
    start_palui, fake_telegram, fake_model
) -> None:
    held = asyncio.Event()  # the model's answer waits until "typing" has been shown
    fake_model.queue(Script(text="slow answer", gate=held))
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    action = await fake_telegram.wait_for_request("sendChatAction")
    assert (int(action.params["chat_id"]), action.params["action"]) == (OWNER_CHAT, "typing")
    held.set()
    [reply] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    assert reply["text"] == "slow answer"
