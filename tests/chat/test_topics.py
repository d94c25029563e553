"""Topics are conversations (issue 30), through the real python-telegram-bot, the fake Bot API
(tests/fakes/telegram_topics.py) and the fake model: each topic of a forum group, and of a
private chat with topics, has its own history and /new, and everything Palui says about a topic
(answers, cards, typing) goes into that topic; the General topic is the chat itself."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select
from telegram import Bot
from telegram.error import BadRequest

from palui.channels.telegram import TelegramChannel
from palui.db.models import InboxUpdate
from palui.db.topics import TopicRepo
from palui.domain import Conversation, TurnStatus
from palui.domain.turn_record import TurnEnd, TurnStart
from palui.web.viewer import Viewer
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.fakes.web_console import console_with_viewer, web_deps

FORUM = -1_001_234_567_891  # a forum supergroup
BOT = "@palui_test_bot"


def user_contents(request: ModelRequest) -> list[str]:
    return [m.get("content") or "" for m in request.messages if m["role"] == "user"]


def echo(request: ModelRequest) -> Script:
    return Script(text=f"heard: {request.last_user_text.removeprefix(BOT).strip()}")


async def said(fake_telegram, chat_id: int, text: str) -> dict[str, Any]:
    return await fake_telegram.wait_for_text(chat_id, text)


async def test_two_topics_keep_separate_histories_and_new_clears_only_its_own(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = echo
    fake_telegram.topics.forum(FORUM)
    plans = fake_telegram.topics.open_topic(FORUM, OWNER_ID, "Plans")
    recipes = fake_telegram.topics.open_topic(FORUM, OWNER_ID, "Recipes")
    palui = await start_palui()

    fake_telegram.push_topic_message(FORUM, OWNER_ID, f"{BOT} apples", plans)
    assert (await said(fake_telegram, FORUM, "heard: apples"))["message_thread_id"] == plans
    fake_telegram.push_topic_message(FORUM, OWNER_ID, f"{BOT} bananas", recipes)
    assert (await said(fake_telegram, FORUM, "heard: bananas"))["message_thread_id"] == recipes
    # Topic B's model request holds none of topic A's words.
    assert user_contents(fake_model.requests[1]) == [f"{BOT} bananas"]
    fake_telegram.push_topic_message(FORUM, OWNER_ID, f"{BOT} cherries", plans)
    assert (await said(fake_telegram, FORUM, "heard: cherries"))["message_thread_id"] == plans
    assert user_contents(fake_model.requests[2]) == [f"{BOT} apples", f"{BOT} cherries"]

    fake_telegram.push_topic_message(FORUM, OWNER_ID, f"/new{BOT}", recipes)
    fresh = await said(fake_telegram, FORUM, "fresh conversation")
    assert fresh["message_thread_id"] == recipes
    fake_telegram.push_topic_message(FORUM, OWNER_ID, f"{BOT} dates", plans)
    await said(fake_telegram, FORUM, "heard: dates")
    assert user_contents(fake_model.requests[3]) == [
        f"{BOT} apples",
        f"{BOT} cherries",
        f"{BOT} dates",
    ]  # /new in the other topic left this one alone
    fake_telegram.push_topic_message(FORUM, OWNER_ID, f"{BOT} eggs", recipes)
    assert (await said(fake_telegram, FORUM, "heard: eggs"))["message_thread_id"] == recipes
    assert user_contents(fake_model.requests[4]) == [f"{BOT} eggs"]

    # The General topic is the forum itself: no thread id in, none out, its own history.
    fake_telegram.push_message(FORUM, OWNER_ID, f"{BOT} figs")
    general = await said(fake_telegram, FORUM, "heard: figs")
    assert "message_thread_id" not in general
    assert user_contents(fake_model.requests[5]) == [f"{BOT} figs"]
    # `palui runs` names each turn's chat and topic.
    runs = await palui.app.store.runs.recent_runs()
    where = [(run.chat_id, run.topic_id) for run in reversed(runs)]
    assert where == [(FORUM, t) for t in (plans, recipes, plans, plans, recipes, 0)]


async def test_a_card_goes_to_its_topic_and_its_tap_runs_the_call_there(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    steps = [Script(tool_calls=[("mcp-notes__delete_note", json.dumps({"id": "1"}))])]
    steps.append(Script(text="Deleted it."))
    fake_model.brain = lambda request: steps.pop(0)
    fake_telegram.topics.forum(FORUM)
    chores = fake_telegram.topics.open_topic(FORUM, OWNER_ID, "Chores")
    await start_palui()
    fake_telegram.push_topic_message(FORUM, OWNER_ID, f"{BOT} delete note 1", chores)
    card = await said(fake_telegram, FORUM, "Approval needed")
    assert card["message_thread_id"] == chores
    keyboard = card["reply_markup"]["inline_keyboard"]
    approve = next(b["callback_data"] for row in keyboard for b in row if b["text"] == "✅ Approve")
    fake_telegram.push_callback(FORUM, OWNER_ID, card["message_id"], approve)
    done = await said(fake_telegram, FORUM, "Deleted it.")
    assert done["message_thread_id"] == chores
    assert json.loads(with_notes.read_text()) == {}


async def test_a_private_chat_with_topics_answers_in_the_topic_and_stores_its_key(
    start_palui, fake_telegram, fake_model
) -> None:
    held = asyncio.Event()  # the first answer waits until "typing" has been shown
    fake_model.queue(Script(text="heard: trains to Rome?", gate=held))
    fake_telegram.topics.private_topics(OWNER_CHAT)
    travel = fake_telegram.topics.open_topic(OWNER_CHAT, OWNER_ID, "Travel")
    palui = await start_palui()
    update = fake_telegram.push_topic_message(OWNER_CHAT, OWNER_ID, "trains to Rome?", travel)
    typing = await fake_telegram.wait_for_request("sendChatAction")
    assert typing.params["message_thread_id"] == travel
    held.set()
    answer = await said(fake_telegram, OWNER_CHAT, "heard: trains to Rome?")
    fake_model.brain = echo
    assert answer["message_thread_id"] == travel
    # The inbox keeps the topic (its row names the topic's key): a recovery answers there too.
    async with palui.app.db.session() as s:
        stored = await s.scalar(select(InboxUpdate).where(InboxUpdate.update_id == update))
    assert stored is not None and stored.chat_id != OWNER_CHAT
    fresh = TopicRepo(palui.app.db)  # another process's view: read from the database
    assert await fresh.conversation(stored.chat_id) == Conversation(OWNER_CHAT, travel)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "and outside the topic?")
    plain = await said(fake_telegram, OWNER_CHAT, "heard: and outside the topic?")
    assert "message_thread_id" not in plain
    assert user_contents(fake_model.requests[-1]) == ["and outside the topic?"]


async def test_a_job_scheduled_in_a_topic_posts_into_that_topic(
    start_palui, fake_telegram, fake_model
) -> None:
    def brain(request: ModelRequest) -> Script:
        if "scheduled job #" in request.last_user_text:
            return Script(text="the plants need water")
        if not any(m["role"] == "tool" for m in request.messages):
            arguments = json.dumps({"prompt": "remind me to water", "schedule": "every 1s"})
            return Script(tool_calls=[("palui__schedule_job", arguments)])
        return Script(text="Scheduled.")

    fake_model.brain = brain
    fake_telegram.topics.forum(FORUM)
    garden = fake_telegram.topics.open_topic(FORUM, OWNER_ID, "Garden")
    await start_palui(PALUI_MIN_JOB_INTERVAL_S="1")
    fake_telegram.push_topic_message(FORUM, OWNER_ID, f"{BOT} remind me every second", garden)
    assert (await said(fake_telegram, FORUM, "Scheduled."))["message_thread_id"] == garden
    posted = await said(fake_telegram, FORUM, "the plants need water")
    assert posted["text"].startswith("⏰ Job #1")
    assert posted["message_thread_id"] == garden


async def test_a_webhook_with_a_topic_id_posts_its_summary_into_the_topic(
    tmp_path, monkeypatch, start_palui, fake_telegram, fake_model
) -> None:
    fake_telegram.topics.forum(FORUM)
    builds = fake_telegram.topics.open_topic(FORUM, OWNER_ID, "Builds")
    config = tmp_path / "palui.toml"
    config.write_text(
        f'[webhooks.ci]\nchat_id = {FORUM}\ntopic_id = {builds}\nsecret_env = "CI_HOOK_SECRET"\n'
    )
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    monkeypatch.setenv("CI_HOOK_SECRET", "ci-secret-0123456789abcdef")
    fake_model.reply("Build 12 failed.")
    palui = await start_palui()
    await palui.app.serving.wait()  # serving: the HTTP server listens (polling began before)
    assert palui.app.http is not None
    headers = {"X-Palui-Secret": "ci-secret-0123456789abcdef", "Content-Type": "text/plain"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{palui.app.http.url}/webhooks/ci", data=b"build 12", headers=headers) as r,
    ):
        assert r.status == 202
    summary = await said(fake_telegram, FORUM, "Build 12 failed.")
    assert summary["message_thread_id"] == builds


async def test_a_topics_message_left_by_a_stopped_palui_is_answered_in_its_topic(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.queue(Script(hang=True), Script(text="answered after the restart"))
    fake_telegram.topics.forum(FORUM)
    trips = fake_telegram.topics.open_topic(FORUM, OWNER_ID, "Trips")
    first = await start_palui()
    update = fake_telegram.push_topic_message(FORUM, OWNER_ID, f"{BOT} which train?", trips)
    await fake_telegram.wait_until_confirmed(update)  # Telegram won't send it again
    await fake_model.wait_until_in_flight()
    first.stop.set()
    await first.task  # stopped mid-turn: the message waits in the inbox under the topic's key
    await start_palui()  # a new process's view: the topic's key is read back from the database
    answer = await said(fake_telegram, FORUM, "answered after the restart")
    assert answer["message_thread_id"] == trips
    assert user_contents(fake_model.requests[-1]) == [f"{BOT} which train?"]


async def test_the_fake_refuses_a_thread_where_telegram_has_no_topic(fake_telegram) -> None:
    fake_telegram.topics.forum(FORUM)
    topic = fake_telegram.topics.open_topic(FORUM, OWNER_ID, "Real")
    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url) as bot:
        for chat_id, thread in ((OWNER_CHAT, topic), (FORUM, 1), (FORUM, topic + 50)):
            with pytest.raises(BadRequest, match="thread not found"):
                await bot.send_message(chat_id, "hi", message_thread_id=thread)
        sent = await bot.send_message(FORUM, "hi", message_thread_id=topic)
    assert (sent.message_thread_id, sent.is_topic_message) == (topic, True)


async def test_the_web_console_names_a_turns_chat_and_topic(store) -> None:
    key = await store.topics.key(Conversation(FORUM, 7))
    assert await store.topics.key(Conversation(FORUM, 7)) == key  # one key per topic
    await store.inbox.add(1, key, OWNER_ID, {"text": "in the topic"})
    session_id = await store.chats.current_session(key)
    await store.turns.start(TurnStart("t1", key, [(1, "in the topic")], session_id=session_id))
    await store.turns.finish(TurnEnd("t1", TurnStatus.DONE, [1], reply="ok", steps=1))
    chats = frozenset({OWNER_ID, key})
    viewer = Viewer(OWNER_ID, chats, "csrf", "@ana", await store.topics.named(chats))
    app = console_with_viewer(web_deps(store, allowed_users=frozenset({OWNER_ID})), viewer)
    async with TestClient(TestServer(app)) as client:
        for path in ("/ui/turns", "/ui/turns/t1"):
            answer = await client.get(path)
            assert answer.status == 200
            assert f"{FORUM} · topic 7" in await answer.text()


async def test_no_search_for_an_unrecorded_message_edits_another_topics_message(
    store, fake_telegram
) -> None:
    fake_telegram.topics.forum(FORUM)
    first = fake_telegram.topics.open_topic(FORUM, OWNER_ID, "First")
    second = fake_telegram.topics.open_topic(FORUM, OWNER_ID, "Second")
    key = await store.topics.key(Conversation(FORUM, first))
    floor = fake_telegram.message_id_of(
        fake_telegram.push_topic_message(FORUM, OWNER_ID, f"{BOT} hi", first)
    )
    params = {"chat_id": FORUM, "text": "the second topic's words", "message_thread_id": second}
    other = fake_telegram.topics.api_send_message(params)  # just above the first topic's floor
    channel = TelegramChannel(fake_telegram.token, fake_telegram.url, conversations=store.topics)
    try:
        await channel.bot.initialize()
        found = await channel.find_unrecorded(key, floor, "the first topic's answer")
    finally:
        await channel.bot.shutdown()
    assert found is None  # a repeat at worst; never another topic's message changed
    assert [m["text"] for m in fake_telegram.visible_messages(FORUM)] == [other["text"]]
    assert not any(r.method == "editMessageText" for r in fake_telegram.requests)
