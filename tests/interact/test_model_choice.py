"""`/model`: the models PALUI_MODELS lists, as buttons; a tap switches that chat's model from its
next turn (the model request names it), not another chat's; /status shows it; data naming no
listed model chooses nothing; the chosen model keeps the fallbacks; a job keeps the model its
chat had chosen when it was made."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import update

from palui import callbacks
from palui.callbacks import ModelButton
from palui.db.models import JobRow
from palui.domain import TurnStatus
from palui.domain.turn_record import TurnEnd, TurnStart
from palui.web.viewer import Viewer
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.fakes.web_console import console_with_viewer, web_deps

FRIEND = 1002
MODELS = {"PALUI_MODELS": "openai/fake-model,openai/strong-model,openai/fast-model"}
TWO_PEOPLE = {"PALUI_ALLOWED_USERS": f"{OWNER_ID},{FRIEND}"}


async def choose(fake_telegram, chat_id: int, user_id: int, model: str) -> None:
    """Send /model, tap the model's button on the card, wait for the card to show it chosen."""
    fake_telegram.push_text(chat_id, user_id, "/model")
    card = await fake_telegram.wait_for_text(chat_id, "Model for this chat:")
    rows = card["reply_markup"]["inline_keyboard"]
    [data] = [b["callback_data"] for row in rows for b in row if b["text"].endswith(model)]
    fake_telegram.push_callback(chat_id, user_id, card["message_id"], data)
    await fake_telegram.wait_for_request(
        "editMessageText", lambda p: f"Model for this chat: openai/{model}" in p.get("text", "")
    )


async def test_model_switches_this_chats_model_from_its_next_turn_and_not_anothers(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui(**MODELS, **TWO_PEOPLE)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/model")
    card = await fake_telegram.wait_for_text(OWNER_CHAT, "Model for this chat: openai/fake-model")
    labels = [b["text"] for row in card["reply_markup"]["inline_keyboard"] for b in row]
    assert labels == ["✅ fake-model", "strong-model", "fast-model"]

    await choose(fake_telegram, OWNER_CHAT, OWNER_ID, "strong-model")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello")
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: hello")
    fake_telegram.push_text(FRIEND, FRIEND, "hi there")
    await fake_telegram.wait_for_text(FRIEND, "echo: hi there")
    asked = {r.last_user_text: r.model for r in fake_model.requests}
    assert asked == {"hello": "strong-model", "hi there": "fake-model"}

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/status")
    status = await fake_telegram.wait_for_text(OWNER_CHAT, "This chat's model")
    assert "This chat's model: openai/strong-model" in status["text"]


async def test_a_model_outside_the_list_cant_be_chosen(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui(**MODELS)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/model")
    card = await fake_telegram.wait_for_text(OWNER_CHAT, "Model for this chat:")
    forged = callbacks.model("openai/expensive-model")
    assert isinstance(callbacks.parse(forged), ModelButton)
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], forged)
    first = await fake_telegram.wait_for_request("answerCallbackQuery")
    assert "can't be chosen" in first.params["text"]
    # A listed model's name in place of its key is not a key either.
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], "md:openai/fast-model")
    second = await fake_telegram.wait_for_request(
        "answerCallbackQuery", lambda p: p["callback_query_id"] != first.params["callback_query_id"]
    )
    assert "can't be chosen" in second.params["text"]
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello")
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: hello")
    assert [r.model for r in fake_model.requests] == ["fake-model"]


async def test_the_chosen_model_keeps_the_fallbacks(
    start_palui, fake_telegram, fake_model, monkeypatch
) -> None:
    monkeypatch.setenv("PALUI_FALLBACK_MODELS", "openai/backup")

    def brain(request: ModelRequest) -> Script:
        if request.model == "fast-model":
            return Script(status=503, error="overloaded")
        return Script(text=f"{request.model}: {request.last_user_text}")

    fake_model.brain = brain
    await start_palui(**MODELS)
    await choose(fake_telegram, OWNER_CHAT, OWNER_ID, "fast-model")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello")
    await fake_telegram.wait_for_text(OWNER_CHAT, "backup: hello")
    assert [r.model for r in fake_model.requests] == ["fast-model", "backup"]


async def test_a_turn_records_its_chats_model_and_the_web_console_shows_it(store) -> None:
    await store.choices.choose_model(OWNER_CHAT, "openai/strong-model")
    begun = await store.turns.start_chat_turn(TurnStart("t1", OWNER_CHAT, [(1, "hi")]), rerun=False)
    assert begun.model == "openai/strong-model"
    await store.turns.finish(TurnEnd("t1", TurnStatus.DONE, [1], reply="ok", steps=1))
    await store.choices.choose_model(OWNER_CHAT, None)
    assert (
        await store.turns.start_chat_turn(TurnStart("t2", OWNER_CHAT, [(2, "yo")]))
    ).model is None
    deps = web_deps(store, allowed_users=frozenset({OWNER_ID}))
    app = console_with_viewer(deps, Viewer(OWNER_ID, frozenset({OWNER_CHAT}), "csrf", "@ana"))
    async with TestClient(TestServer(app)) as client:
        page = await (await client.get("/ui/turns/t1")).text()
    assert "openai/strong-model" in page


async def test_a_job_keeps_the_model_its_chat_had_chosen_when_it_was_made(
    store, start_palui, fake_telegram, fake_model
) -> None:
    await store.choices.choose_model(OWNER_CHAT, "openai/strong-model")
    long_ago = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1, minutes=30)
    job = await store.jobs.create(
        OWNER_CHAT, "catch up", "every 1h", "UTC", 100_000, created_by="test", anchor_at=long_ago
    )
    assert job.model == "openai/strong-model"
    await store.choices.choose_model(OWNER_CHAT, None)  # the chat went back to the default
    async with store.db.session() as s, s.begin():
        await s.execute(update(JobRow).values(created_at=long_ago, updated_at=long_ago))

    await start_palui(**MODELS)
    await fake_telegram.wait_for_text(OWNER_CHAT, f"⏰ Job #{job.id}\n")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "and you?")
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: and you?")
    asked = {r.last_user_text: r.model for r in fake_model.requests}
    assert asked["and you?"] == "fake-model"
    assert [m for text, m in asked.items() if "scheduled job #" in text] == ["strong-model"]
