"""Received, queued: a message that arrives while a turn runs gets the 👀 reaction
(setMessageReaction), so the person knows it was seen, and the next turn answers it."""

from __future__ import annotations

import asyncio

from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script


async def test_a_message_sent_during_a_turn_gets_eyes_and_is_answered_next(
    start_palui, fake_telegram, fake_model
) -> None:
    release = asyncio.Event()

    async def brain(request):
        if len(fake_model.requests) == 1:
            await release.wait()
            return Script(text="first answer")
        return Script(text="second answer")

    fake_model.brain = brain
    await start_palui()
    first = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "one")
    await fake_model.wait_until_in_flight()
    second = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "two")
    queued = fake_telegram.message_id_of(second)
    reaction = await fake_telegram.wait_for_request("setMessageReaction")
    assert (reaction.params["chat_id"], reaction.params["message_id"]) == (OWNER_CHAT, queued)
    assert fake_telegram.groups.emoji_on(OWNER_CHAT, queued) == ["👀"]
    release.set()

    await fake_telegram.wait_for_text(OWNER_CHAT, "second answer")
    assert [m["role"] for m in fake_model.requests[1].messages][-1] == "user"
    assert fake_model.requests[1].messages[-1]["content"] == "two"
    # Only the one that waited: the first started a turn at once.
    assert fake_telegram.groups.emoji_on(OWNER_CHAT, fake_telegram.message_id_of(first)) == []
    methods = [r.method.lower() for r in fake_telegram.requests]
    assert methods.count("setmessagereaction") == 1
