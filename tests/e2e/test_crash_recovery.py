"""`kill -9` of `palui run` mid-turn, then a restart: the message is answered exactly once."""

from __future__ import annotations

import pytest

from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script
from tests.toolkit import Daemon

pytestmark = pytest.mark.slow


async def test_kill_9_mid_turn_then_restart_answers_exactly_once(
    daemon: Daemon, fake_telegram, fake_model
) -> None:
    fake_model.queue(Script(hang=True), Script(text="the answer"), Script(text="second answer"))
    await daemon.start()
    update_id = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "important question")
    await fake_telegram.wait_for_delivery(update_id, timeout=60)
    await fake_model.wait_until_in_flight(timeout=60)  # the turn is running
    await daemon.kill9()
    assert fake_telegram.sent_messages(OWNER_CHAT) == []

    await daemon.start()
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=60)
    assert [m["text"] for m in replies] == ["the answer"]
    assert fake_model.requests[1].messages[-1]["content"] == "important question"

    # One more round trip proves nothing else was queued: still exactly one answer to the first.
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "thanks")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=60)
    assert [m["text"] for m in replies] == ["the answer", "second answer"]
    history = [m["content"] for m in fake_model.requests[2].messages[1:]]
    assert history == ["important question", "the answer", "thanks"]
    stderr = await daemon.stop()
    assert fake_telegram.token not in stderr  # logs never carry the bot token


async def test_a_card_pending_across_kill_9_runs_once_when_tapped_after_restart(
    with_notes, daemon: Daemon, fake_telegram, fake_model
) -> None:
    import json

    steps = [
        Script(tool_calls=[("mcp-notes__delete_note", json.dumps({"id": "1"}))]),
        Script(text="Deleted after the restart."),
    ]
    fake_model.brain = lambda request: steps.pop(0)
    await daemon.start()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "delete note 1")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: "Approval needed" in str(p.get("text")), timeout=60
    )
    card = fake_telegram.sent_messages(OWNER_CHAT)[0]
    await daemon.kill9()

    await daemon.start()
    markup = card["reply_markup"]
    markup = json.loads(markup) if isinstance(markup, str) else markup
    approve = markup["inline_keyboard"][0][0]["callback_data"]
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], approve)
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: p.get("text") == "Deleted after the restart.", timeout=60
    )
    assert json.loads(with_notes.read_text()) == {}
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], approve)
    await fake_telegram.wait_for_request(
        "answerCallbackQuery", predicate=lambda p: "Already decided" in str(p.get("text"))
    )
    assert len(fake_model.requests) == 2  # the turn resumed once; nothing ran twice
