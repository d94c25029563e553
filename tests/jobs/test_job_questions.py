"""A server's question during a job's run (DESIGN §1.13): it goes to the job's owner in the
job's chat, headed with the job's name like the run's answer, and the run waits for the answer;
nobody else can answer it. The server is the fake desk (tests/fakes/asking_server.py)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text

from tests.fakes.asking_server import desk_served
from tests.fakes.memory_channel import (
    USER_ID,
    button,
    in_memory_settings,
    running_palui,
    switch_on,
)
from tests.fakes.watched_channel import BOUND_S, WatchedChannel
from tests.toolkit import ScriptedModel, answer, call

SOMEONE_ELSE = 4242  # allowed to talk to Palui, but not the job's owner


async def test_a_job_runs_question_goes_to_its_owner_and_the_run_waits_for_the_answer(
    database_url: str, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [
            call("palui__schedule_job", {"prompt": "Book a room.", "schedule": "every 1h"}),
            answer("Scheduled."),
            call("mcp-desk__get_room", {"meeting": "standup"}),  # the job's run
            answer("Booked."),
            answer("Hi."),
        ]
    )  # fmt: skip
    async with desk_served() as (_, url):
        settings = in_memory_settings(
            database_url, str(tmp_path / "data"),
            mcp={"desk": {"url": url, "trust": "trusted"}},
            allowed_users=frozenset({USER_ID, SOMEONE_ELSE}),
        )  # fmt: skip
        chat = WatchedChannel()
        async with running_palui(settings, model, chat) as (app, _):
            await app.connectors.get("mcp-desk").wait_settled()
            await switch_on(app, "mcp-desk", "get_room")
            await chat.send("every hour, book the standup's room")
            (job,) = await app.store.jobs.all()
            assert await app.store.jobs.claim_run(job, datetime.now(UTC).replace(microsecond=0))
            kicked = asyncio.create_task(chat.send("hello"))  # the worker runs the run first
            card = await chat.wait_for_card(lambda c: "mcp-desk asks" in c.text)
            stranger = chat.inbound(callback_data=button(card, "green"), user_id=SOMEONE_ELSE)
            refused = asyncio.create_task(chat.push(stranger))
            await chat.wait_for_toast(f"cb{stranger.update_id}")
            answered = asyncio.create_task(chat.tap(button(card, "blue")))
            async with asyncio.timeout(BOUND_S):
                await asyncio.gather(kicked, refused, answered)
            async with app.db.session() as s:
                rows = (await s.execute(text("SELECT user_id, status FROM server_questions"))).all()

    assert job.owner_id == USER_ID
    assert card.text.splitlines() == [
        f"⏰ Job #{job.id}",
        "❓ mcp-desk asks (the server's words, not Palui's):",
        "Which room for “standup”?",
    ]
    toasts = dict(chat.answers)
    assert toasts[f"cb{stranger.update_id}"] == "Only the person this turn is for can answer."
    results = [
        str(m.content)
        for messages, *_ in model.calls
        for m in messages
        if m.name == "mcp-desk__get_room"
    ]
    assert results and "standup in blue" in results[-1]
    assert f"⏰ Job #{job.id}\nBooked." in chat.texts()
    assert [(row.user_id, row.status) for row in rows] == [(USER_ID, "taken")]
