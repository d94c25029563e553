"""Run-rate and token caps pause turns, say so, keep the messages, and answer them later."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from palui.db.models import ModelCall, Turn
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script


async def test_the_run_past_the_hourly_cap_is_refused_and_answered_once_it_lifts(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.queue(Script(text="first"), Script(text="both later"))
    palui = await start_palui(PALUI_RUNS_PER_HOUR="1")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "one")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "two")
    notice = (await fake_telegram.wait_for_messages(OWNER_CHAT, 2))[1]["text"]
    assert notice.startswith("Paused: 1 runs in the last hour (the limit is 1).")
    assert "Next run possible at" in notice and "kept and answered then" in notice
    assert len(fake_model.requests) == 1

    # An hour passes (the run moves out of the window); the next message wakes the chat.
    async with palui.app.db.session() as s, s.begin():
        await s.execute(update(Turn).values(started_at=datetime.now(UTC) - timedelta(hours=2)))
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "three")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    assert replies[2]["text"] == "both later"
    contents = [m["content"] for m in fake_model.requests[1].messages]
    assert contents[-2:] == ["two", "three"]  # the paused message was kept


async def test_the_daily_token_cap_pauses_turns_and_names_the_cap(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.queue(Script(text="expensive", usage=(900, 200)))
    palui = await start_palui(PALUI_DAILY_TOKEN_CAP="1000")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "one")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "two")
    notice = (await fake_telegram.wait_for_messages(OWNER_CHAT, 2))[1]["text"]
    assert notice.startswith("Paused: today's token cap (1,000) is used up.")
    assert "resets at 00:00 UTC" in notice
    assert len(fake_model.requests) == 1

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/status")
    status = (await fake_telegram.wait_for_messages(OWNER_CHAT, 3))[2]["text"]
    assert "Tokens today: 1,100 / 1,000" in status
    # Only one notice per pause, however many messages arrive.
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "four")
    async with palui.app.db.session() as s, s.begin():
        await s.execute(update(ModelCall).values(total_tokens=0))  # as if a new day began
    fake_model.queue(Script(text="answered two and four"))
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "five")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 4)
    assert replies[3]["text"] == "answered two and four"
    assert len(fake_telegram.sent_messages(OWNER_CHAT)) == 4
