"""A streamed preview left by a turn that died is taken over by the turn re-run after the
restart: the answer is shown once, in that message, never beside a second copy."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select, update

from palui.db.models import OutboxMessage
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script
from tests.toolkit import LONG_ANSWER as ANSWER
from tests.toolkit import Daemon, recorded_preview, visible_texts
from tests.toolkit import stop_palui as stop


def shown_twice(fake_telegram: Any) -> list[str]:
    texts = visible_texts(fake_telegram)
    return [text for text in set(texts) if texts.count(text) > 1]


async def test_a_turn_stopped_mid_stream_is_re_run_into_its_preview_shown_once(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    fake_model.queue(Script(text=ANSWER, hang=True), Script(text=ANSWER))
    first = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "tell me")
    preview = await fake_telegram.wait_for_request("sendMessage", timeout=30)
    assert "parse_mode" not in preview.params  # a plain-text preview, not the answer
    message_id = await recorded_preview(database_url)
    await stop(first)
    assert visible_texts(fake_telegram) == [ANSWER]  # the preview stays in the chat

    await start_palui()
    await fake_telegram.wait_for_request(
        "editMessageText", predicate=lambda p: p.get("parse_mode") == "HTML", timeout=30
    )
    [message] = fake_telegram.visible_messages(OWNER_CHAT)
    assert message["message_id"] == message_id
    assert message["text"] == ANSWER
    assert len(fake_model.requests) == 2  # it was re-run, and answered in the old preview


async def test_a_preview_that_can_no_longer_be_edited_gives_way_to_the_answer_sent_anew(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    fake_model.queue(Script(text=ANSWER, hang=True), Script(text=ANSWER))
    first = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "tell me")
    message_id = await recorded_preview(database_url)
    await stop(first)
    fake_telegram.chats.deleted_messages.append((OWNER_CHAT, message_id))  # gone meanwhile

    await start_palui()
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=30)
    [message] = fake_telegram.visible_messages(OWNER_CHAT)
    assert message["message_id"] != message_id
    assert message["text"] == ANSWER


async def test_a_re_run_that_fails_removes_the_preview_it_took_over(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    fake_model.queue(Script(text=ANSWER, hang=True), Script(status=400, error="bad request"))
    first = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "tell me")
    message_id = await recorded_preview(database_url)
    await stop(first)

    await start_palui()
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=30)
    reply = replies[-1]
    assert reply["text"].startswith("The model call failed")
    assert (OWNER_CHAT, message_id) in fake_telegram.deleted_messages
    assert ANSWER not in visible_texts(fake_telegram)


async def test_a_final_edit_repeated_after_a_crash_counts_as_delivered_and_sends_nothing_new(
    start_palui, fake_telegram, fake_model, database_url: str
) -> None:
    slow = asyncio.Event()  # the answer ends once its preview is out (a fast one has none)
    fake_model.queue(Script(text=ANSWER, gate=slow), Script(text="second answer"))
    handle = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "tell me")
    await fake_telegram.wait_for_request("sendMessage", timeout=30)
    slow.set()
    await fake_telegram.wait_for_request(
        "editMessageText", predicate=lambda p: p.get("parse_mode") == "HTML", timeout=30
    )
    [message] = fake_telegram.visible_messages(OWNER_CHAT)
    # What a crash between the final edit and its record leaves: the reply not marked sent.
    async with handle.app.db.session() as s, s.begin():
        row = await s.scalar(select(OutboxMessage).where(OutboxMessage.chat_id == OWNER_CHAT))
        assert row is not None and row.edit_message_id == message["message_id"]
        await s.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == row.id)
            .values(sent_at=None, parts_sent=0)
        )
        first_reply = row.id

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "and?")
    await fake_telegram.wait_for_text(OWNER_CHAT, "second answer", timeout=30)
    assert visible_texts(fake_telegram) == [ANSWER, "second answer"]
    async with handle.app.db.session() as s:
        sent_at = await s.scalar(
            select(OutboxMessage.sent_at).where(OutboxMessage.id == first_reply)
        )
    assert sent_at is not None  # "message is not modified" counted as delivered


# -- the real process, killed ---------------------------------------------------------------


@pytest.fixture
async def daemon(settings_env: dict[str, str], tmp_path) -> AsyncIterator[Daemon]:
    env = dict(os.environ)
    env.update(settings_env)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    proc = Daemon(env, str(tmp_path))
    yield proc
    await proc.stop()


@pytest.mark.slow
async def test_kill_9_after_the_preview_then_restart_shows_the_answer_once(
    daemon: Daemon, fake_telegram, fake_model, database_url: str
) -> None:
    fake_model.queue(Script(text=ANSWER, hang=True), Script(text=ANSWER), Script(text="more"))
    await daemon.start()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "tell me")
    await fake_telegram.wait_for_request("sendMessage", timeout=60)
    message_id = await recorded_preview(database_url, timeout=60)
    await daemon.kill9()
    assert visible_texts(fake_telegram) == [ANSWER]

    await daemon.start()
    await fake_telegram.wait_for_request(
        "editMessageText", predicate=lambda p: p.get("parse_mode") == "HTML", timeout=60
    )
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "thanks")
    await fake_telegram.wait_for_text(OWNER_CHAT, "more", timeout=60)
    assert visible_texts(fake_telegram) == [ANSWER, "more"]
    assert fake_telegram.visible_messages(OWNER_CHAT)[0]["message_id"] == message_id
    assert shown_twice(fake_telegram) == []
