"""`palui run` polls Telegram before the rest of Palui and the model layer are ready: what is
sent meanwhile is stored (Telegram is told it arrived) and answered once the model layer is
ready, never lost and never answered before. The model layer that takes seconds is litellm's
(a provider outside OpenAI's format; here every model is sent through it)."""

from __future__ import annotations

import asyncio
from typing import Any

from palui.app.start import run
from palui.config import load_settings
from palui.llm import warm
from tests.conftest import OWNER_CHAT, OWNER_ID


async def test_palui_run_polls_before_the_model_layer_is_ready_and_answers_what_came_then(
    settings_env, fake_telegram, fake_model, monkeypatch
) -> None:
    loading, may_finish = asyncio.Event(), asyncio.Event()
    rehearse = warm.rehearse

    async def held_rehearsal(litellm: Any, model: str) -> None:
        loading.set()  # the model layer is loading: imported, its rehearsal held here
        await may_finish.wait()
        await rehearse(litellm, model)

    monkeypatch.setattr(warm, "rehearse", held_rehearsal)
    monkeypatch.setenv("PALUI_MODEL_VIA_LITELLM", "true")
    fake_model.reply("Hello, Ana.")
    stop = asyncio.Event()
    daemon = asyncio.create_task(run(load_settings(), stop))
    try:
        await fake_telegram.wait_for_request("getUpdates")
        update = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello?")
        await fake_telegram.wait_until_confirmed(update)  # stored: Telegram won't send it again
        await loading.wait()
        assert fake_model.requests == []  # the turn waits for the model layer
        assert fake_telegram.sent_messages(OWNER_CHAT) == []

        may_finish.set()
        (reply,) = await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
        assert reply["text"] == "Hello, Ana."
        assert len(fake_model.requests) == 1  # answered once
    finally:
        stop.set()
        await asyncio.wait_for(daemon, 30)
