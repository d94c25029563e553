"""The model provider down (DESIGN §1.13, Operations): the chat is told once, its messages are
kept and answered when the model answers again (one probe, with back-off), nothing twice; a
turn that already changed something says so as before, and its call is never run again."""

from __future__ import annotations

import json

from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script

TOLD = "The model isn't answering right now; I'll answer your message when it's back."


def is_ping(request: ModelRequest) -> bool:
    return request.last_user_text == "ping"


async def test_a_chat_is_told_once_and_answered_once_when_the_model_is_back(
    start_palui, fake_telegram, fake_model
) -> None:
    down = True

    def brain(request: ModelRequest) -> Script:
        if down:
            return Script(status=503, error="overloaded")
        said = [m["content"] for m in request.messages if m["role"] == "user"]
        return Script(text=f"answered: {json.dumps(said)}")

    fake_model.brain = brain
    palui = await start_palui(PALUI_FALLBACK_MODELS="openai/backup-model")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    assert (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]["text"] == TOLD
    turns = [r for r in fake_model.requests if not is_ping(r)]
    assert [r.model for r in turns] == ["fake-model", "backup-model"]

    # Meanwhile: kept, no turn, no second notice; only the probe asks the model.
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "and now?")
    await fake_model.wait_for(lambda: sum(map(is_ping, fake_model.requests)) >= 2, "probes")
    await palui.app.chats.wait_idle(OWNER_CHAT)
    assert [r for r in fake_model.requests if not is_ping(r)] == turns
    assert len(fake_telegram.sent_messages(OWNER_CHAT)) == 1

    down = False
    [_, answer] = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert answer["text"].startswith("answered:")
    assert "hi" in answer["text"] and "and now?" in answer["text"]  # one turn for both
    await palui.app.chats.wait_idle(OWNER_CHAT)
    assert len(fake_telegram.sent_messages(OWNER_CHAT)) == 2  # nothing answered twice

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "thanks")
    [*_, last] = await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    assert last["text"].startswith("answered:")


async def test_a_turn_that_already_wrote_says_what_ran_and_is_not_run_again(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    calls = []

    def brain(request: ModelRequest) -> Script:
        if is_ping(request):
            return Script(text="pong")
        if not [m for m in request.messages if m["role"] == "tool"]:
            calls.append(request)
            arguments = json.dumps({"title": "rent", "body": "pay it"})
            return Script(tool_calls=[("mcp-notes__add_note", arguments)])
        return Script(status=503, error="overloaded")  # down right after the write

    fake_model.brain = brain
    palui = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "note: pay rent")
    [reply] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    assert reply["text"].startswith("The model could not be reached")
    assert "mcp-notes__add_note" in reply["text"] and "did run" in reply["text"]
    await palui.app.chats.wait_idle(OWNER_CHAT)
    assert len(calls) == 1  # the message was not kept: the write is never run again
    assert await palui.app.store.inbox.pending(OWNER_CHAT) == []
