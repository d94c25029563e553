"""Palui in this process through an in-memory channel and a scripted model: a turn, a command and
an approval tap, with no fake Telegram server and no litellm (tests/fakes/memory_channel.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from palui import callbacks
from palui.callbacks import ApprovalAction, ApprovalButton
from tests.fakes.memory_channel import in_memory_settings, running_palui
from tests.toolkit import ScriptedModel, answer, call


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Any:
    return in_memory_settings(database_url, str(tmp_path / "data"))


@pytest.fixture
async def palui(settings: Any) -> AsyncIterator[Any]:
    model = ScriptedModel(
        [
            answer("Hello, Ana."),
            call("palui__delete_job", {"job_id": 7}),
            answer("I left the job alone."),
        ]
    )
    async with running_palui(settings, model) as (app, chat):
        yield app, chat, model


async def test_a_message_gets_its_turns_reply(palui: Any) -> None:
    _, chat, model = palui
    assert await chat.send("hi")
    assert chat.texts() == ["Hello, Ana."]
    assert model.calls[0][0][-1].content == "hi"


async def test_a_command_is_answered_without_the_model(palui: Any) -> None:
    _, chat, model = palui
    await chat.command("help")
    assert chat.texts()[0].startswith("I'm Palui, your assistant.")
    assert "/jobs — scheduled jobs" in chat.texts()[0]
    await chat.command("status")
    assert "Palui · model scripted" in chat.texts()[1]
    assert model.calls == []


async def test_a_denied_card_resumes_its_turn_with_nothing_run(palui: Any) -> None:
    app, chat, model = palui
    await chat.send("hi")
    await chat.send("delete job 7")
    card = chat.cards[-1]
    assert "palui__delete_job" in card.text
    taps = [callbacks.parse(b.data) for row in card.keyboard for b in row]
    token = next(t.token for t in taps if isinstance(t, ApprovalButton))
    await chat.tap(callbacks.approval(token, ApprovalAction.DENY))
    await app.chats.wait_idle(chat.chat_id)
    assert chat.answers[-1][1] == "Denied."
    assert chat.texts()[-1] == "I left the job alone."
    assert len(model.calls) == 3
