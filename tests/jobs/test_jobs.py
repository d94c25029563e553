"""Scheduled jobs end to end: created from chat by the model, run as `scheduled` turns under the
policy, fired once across processes and restarts, capped per job, and managed with /jobs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from palui.db.models import CallRecordRow, JobRow, JobRun, Turn
from palui.domain.turn_record import TurnStart
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.toolkit import buttons, tool_results, wait_for_card, wait_until
from tests.toolkit import script_call as call

FAST = {"PALUI_MIN_JOB_INTERVAL_S": "1"}


# The notes server runs in this process (the same server and MCP session, no stdio process):
# these tests are about jobs, not the transport.
pytestmark = pytest.mark.usefixtures("mcp_in_process")


def is_job_run(request: ModelRequest) -> bool:
    return "scheduled job #" in request.last_user_text


def job_texts(fake_telegram, job_id: int | None = None) -> list[str]:
    heading = "⏰ Job #" if job_id is None else f"⏰ Job #{job_id}\n"
    return [
        m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT) if m["text"].startswith(heading)
    ]


async def add_job(
    target, schedule: str, prompt: str, *, cap: int = 100_000, anchor: datetime | None = None
) -> Any:
    """A job as palui__schedule_job would store it (into a running app, whose scheduler then
    re-reads the table, or straight into a store)."""
    store = getattr(target, "store", target)
    if store is not target:
        await target.serving.wait()
    anchor = anchor or datetime.now(UTC).replace(microsecond=0)
    job = await store.jobs.create(
        OWNER_CHAT, prompt, schedule, "UTC", cap, created_by="test", anchor_at=anchor
    )
    if getattr(target, "store", None) is not None and target.jobs is not None:
        await target.jobs.sync()
    return job


async def final_text(fake_telegram, part: str) -> str:
    """The chat message holding `part`, once a streamed answer has grown to hold it."""

    async def found() -> str | None:
        texts = [m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT)]
        return next((text for text in texts if part in text), None)

    return await wait_until(found)


def soon(seconds: int = 1) -> str:
    return (datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=seconds)).isoformat()


async def test_a_job_created_from_chat_runs_its_read_tool_and_gets_no_destructive_tools(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    def brain(request: ModelRequest) -> Script:
        results = tool_results(request)
        if is_job_run(request):
            if not results:
                return call("mcp-notes__list_notes")
            return Script(text=f"Your notes: {results[-1]}")
        if not results:
            return call("palui__schedule_job", prompt="list my notes", schedule="every 1s")
        return Script(text=f"Done: {results[-1]}")

    fake_model.brain = brain
    palui = await start_palui(**FAST)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "every second, list my notes")
    await final_text(fake_telegram, "Scheduled job #1: every second")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: p.get("text", "").startswith("⏰ Job #1")
    )
    assert "Your notes: 1: Groceries" in job_texts(fake_telegram, 1)[0]

    chat_tools = set(fake_model.requests[0].tool_names)
    assert {"palui__schedule_job", "palui__delete_job", "mcp-notes__delete_note"} <= chat_tools
    job_request = next(r for r in fake_model.requests if is_job_run(r))
    offered = set(job_request.tool_names)
    assert {"mcp-notes__list_notes", "mcp-notes__add_note", "palui__list_jobs"} <= offered
    # Destructive tools are not offered to a job's run, nor (by default) job creation.
    assert not offered & {"mcp-notes__delete_note", "palui__delete_job", "palui__schedule_job"}

    async with palui.app.db.session() as s:
        kinds = set(await s.scalars(select(Turn.kind)))
        listed = await s.scalar(
            select(func.count()).where(
                CallRecordRow.tool == "mcp-notes__list_notes", CallRecordRow.status == "ok"
            )
        )
    assert kinds == {"chat", "scheduled"} and listed


async def test_a_write_in_a_job_run_posts_a_card_and_runs_only_after_approve(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    def brain(request: ModelRequest) -> Script:
        if not tool_results(request):
            return call("mcp-notes__add_note", title="Daily", body="from the job")
        return Script(text="Added the daily note.")

    fake_model.brain = brain
    palui = await start_palui()
    await palui.app.serving.wait()
    await add_job(palui.app, soon(), "add the daily note")
    card = await wait_for_card(fake_telegram)
    assert "mcp-notes__add_note  (write)" in card["text"]
    assert "Why: scheduled jobs ask before any write." in card["text"]
    assert "Daily" not in with_notes.read_text()

    fake_telegram.push_callback(
        OWNER_CHAT, OWNER_ID, card["message_id"], buttons(card)["✅ Approve"]
    )
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: p.get("text") == "⏰ Job #1\nAdded the daily note."
    )
    notes = json.loads(with_notes.read_text())
    assert [n["title"] for n in notes.values()] == ["Groceries", "Daily"]


async def test_two_palui_instances_on_one_database_fire_each_due_run_once(
    database_url, start_palui, fake_telegram, fake_model
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("several processes share a PostgreSQL database")
    fake_model.brain = lambda request: Script(text="tick")
    first = await start_palui(**FAST, PALUI_JOB_SYNC_S="0.2")
    second = await start_palui(**FAST, PALUI_JOB_SYNC_S="0.2")
    await second.app.serving.wait()
    job = await add_job(first.app, "every 1s", "say tick")
    # The second process sees the first one's new job at its next periodic re-read.
    await wait_until(lambda: second.app.jobs._scheduler.get_job(f"job-{job.id}"))

    async def three_done() -> bool:
        async with first.app.db.session() as s:
            done = await s.scalar(
                select(func.count()).where(Turn.kind == "scheduled", Turn.status == "done")
            )
        return (done or 0) >= 3

    await wait_until(three_done, timeout=30)
    for palui in (first, second):
        palui.stop.set()
        await palui.task

    async with first.app.db.session() as s:
        runs = list(await s.scalars(select(JobRun)))
        turns = list(await s.scalars(select(Turn).where(Turn.kind == "scheduled")))
    assert len({run.scheduled_for for run in runs}) == len(runs) >= 3
    # Each claimed run started at most one turn, in one of the two processes.
    run_turns = [run.turn_id for run in runs if run.turn_id]
    assert len(set(run_turns)) == len(run_turns)
    assert {turn.id for turn in turns} <= set(run_turns)
    assert len([r for r in fake_model.requests if is_job_run(r)]) == len(turns)
    assert len([turn for turn in turns if turn.status == "done"]) >= 3


async def test_palui_down_across_three_due_times_runs_once_and_says_so(
    store, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = lambda request: Script(text="caught up")
    long_ago = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3, minutes=30)
    job = await add_job(store, "every 1h", "catch up", anchor=long_ago)
    async with store.db.session() as s, s.begin():
        await s.execute(update(JobRow).values(created_at=long_ago, updated_at=long_ago))

    palui = await start_palui()
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    texts = [m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT)]
    assert texts == [
        f"⏰ Job #{job.id}: 3 runs were missed while Palui was down; running once now.",
        f"⏰ Job #{job.id}\ncaught up",
    ]
    runs = await palui.app.store.jobs.runs(job.id)
    assert [(run.missed, run.status) for run in runs] == [(3, "started")]
    assert len([r for r in fake_model.requests if is_job_run(r)]) == 1


async def test_a_run_interrupted_by_a_crash_is_not_fired_again(
    store, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = lambda request: Script(text="should not run")
    anchor = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=90)
    job = await add_job(store, "every 1h", "once only", anchor=anchor)
    async with store.db.session() as s, s.begin():
        await s.execute(update(JobRow).values(created_at=anchor, updated_at=anchor))
    # The process died while this run's turn was running.
    session = await store.chats.current_session(OWNER_CHAT)
    await store.turns.start(TurnStart("crashed", OWNER_CHAT, kind="scheduled", session_id=session))
    assert await store.jobs.claim_run(job, anchor + timedelta(hours=1))
    assert await store.jobs.start_run((await store.jobs.queued())[0].id, "crashed")

    palui = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/jobs")
    card = (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]
    assert "Last run: " in card["text"] and "failed" in card["text"]
    assert await palui.app.store.jobs.queued() == []
    assert len(await palui.app.store.jobs.runs(job.id)) == 1
    assert not [r for r in fake_model.requests if is_job_run(r)]


async def test_a_job_over_its_token_cap_skips_and_says_so_once_while_another_job_runs(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = lambda request: Script(text="ran", usage=(40, 10))
    palui = await start_palui(**FAST)
    capped = await add_job(palui.app, "every 1s", "job one", cap=30)
    other = await add_job(palui.app, "every 1s", "job two")

    async def skipped_twice() -> bool:
        runs = await palui.app.store.jobs.runs(capped.id)
        return sum(run.status == "skipped" for run in runs) >= 2

    await wait_until(skipped_twice)
    seen = len(job_texts(fake_telegram, other.id))
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda _: len(job_texts(fake_telegram, other.id)) > seen + 1
    )
    notes = [
        m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT) if "skipped its run" in m["text"]
    ]
    assert notes == [
        f"⏸ Job #{capped.id} skipped its run: it has used its daily token cap (30 tokens) "
        "today. It runs again after 00:00 UTC tomorrow; other jobs and your messages are not "
        "affected."
    ]
    assert len(job_texts(fake_telegram, capped.id)) == 1  # its one run before the cap
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello")
    await fake_telegram.wait_for_request("sendMessage", predicate=lambda p: p["text"] == "ran")


async def test_jobs_shows_a_card_and_pause_resume_and_delete_work(
    start_palui, fake_telegram, fake_model
) -> None:
    palui = await start_palui()
    job = await add_job(palui.app, "0 8 * * *", "morning summary")
    await fake_telegram.wait_for_request("setMyCommands")
    assert {"command": "jobs", "description": "Scheduled jobs: pause or delete them"} in (
        fake_telegram.commands
    )
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/help")
    help_text = (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]["text"]
    assert "/jobs — scheduled jobs" in help_text

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/jobs")
    card = (await fake_telegram.wait_for_messages(OWNER_CHAT, 2))[1]
    lines = card["text"].splitlines()
    assert lines[:3] == [
        f"⏰ Job #{job.id}  ·  ✅ on",
        "Every day at 08:00 (UTC)",
        "“morning summary”",
    ]
    assert "Last run: not yet" in lines and lines[3].startswith("Next run: ")
    actions = buttons(card)
    assert set(actions) == {"⏸ Pause", "🗑 Delete"}
    assert all(len(data.encode()) <= 64 for data in actions.values())
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/status")
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: "Jobs: 1 active" in p.get("text", "")
    )

    def edited(text: str):
        return lambda p: text in str(p.get("text", ""))

    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], actions["⏸ Pause"])
    await fake_telegram.wait_for_request("editMessageText", predicate=edited("⏸ paused"))
    assert not (await palui.app.store.jobs.get(job.id)).enabled
    assert palui.app.jobs._scheduler.get_job(f"job-{job.id}") is None
    paused = fake_telegram.sent_messages(OWNER_CHAT)[1]
    assert "Next run: —" in paused["text"]

    fake_telegram.push_callback(
        OWNER_CHAT, OWNER_ID, card["message_id"], buttons(paused)["▶️ Resume"]
    )
    await fake_telegram.wait_for_request("editMessageText", predicate=edited("✅ on"))
    assert palui.app.jobs._scheduler.get_job(f"job-{job.id}") is not None

    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], actions["🗑 Delete"])
    await fake_telegram.wait_for_request("editMessageText", predicate=edited("can't be undone"))
    assert await palui.app.store.jobs.get(job.id) is not None  # not until confirmed
    confirm = buttons(fake_telegram.sent_messages(OWNER_CHAT)[1])
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], confirm["🗑 Yes, delete"])
    await fake_telegram.wait_for_request("editMessageText", predicate=edited("deleted"))
    assert await palui.app.store.jobs.get(job.id) is None
    assert palui.app.jobs._scheduler.get_job(f"job-{job.id}") is None

    # The old card's buttons now change nothing.
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], actions["⏸ Pause"])
    await fake_telegram.wait_for_request(
        "answerCallbackQuery", predicate=edited("That job is gone")
    )


async def test_a_job_created_in_a_tainted_turn_needs_approval(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    def brain(request: ModelRequest) -> Script:
        results = tool_results(request)
        if not results:
            return call("mcp-notes__search_notes", query="milk")
        if len(results) == 1:
            return call("palui__schedule_job", prompt="buy milk daily", schedule="0 9 * * *")
        return Script(text="Scheduled it.")

    fake_model.brain = brain
    palui = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "find milk and remind me daily")
    card = await wait_for_card(fake_telegram)
    assert "palui__schedule_job  (write)" in card["text"]
    assert "Why: this turn read untrusted content from mcp-notes" in card["text"]
    assert await palui.app.store.jobs.all() == []

    fake_telegram.push_callback(
        OWNER_CHAT, OWNER_ID, card["message_id"], buttons(card)["✅ Approve"]
    )
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda p: p.get("text") == "Scheduled it."
    )
    [job] = await palui.app.store.jobs.all()
    assert (job.prompt, job.schedule, job.chat_id) == ("buy milk daily", "0 9 * * *", OWNER_CHAT)


async def test_the_model_gets_a_plain_error_for_a_bad_or_too_frequent_schedule(
    start_palui, fake_telegram, fake_model
) -> None:
    def brain(request: ModelRequest) -> Script:
        results = tool_results(request)
        if not results:
            return call("palui__schedule_job", prompt="spam", schedule="every 5s")
        return Script(text=results[-1])

    fake_model.brain = brain
    palui = await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "ping me every 5 seconds")
    reply = await final_text(fake_telegram, "Nothing was scheduled")
    assert "more often than the minimum (1m)" in reply and "Nothing was scheduled" in reply
    assert await palui.app.store.jobs.all() == []


async def test_send_message_reaches_a_known_chat_and_refuses_others(
    start_palui, fake_telegram, fake_model
) -> None:
    def brain(request: ModelRequest) -> Script:
        results = tool_results(request)
        if not results:
            return call("palui__send_message", chat_id=424242, text="leak")
        if len(results) == 1:
            return call("palui__send_message", chat_id=OWNER_CHAT, text="Reminder: stretch")
        return Script(text="; ".join(results))

    fake_model.brain = brain
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "remind me")
    answer = await final_text(fake_telegram, "Sent to chat")
    assert "chat 424242 is not one of the user's chats" in answer
    # The sent message goes out through the outbox, beside the streamed answer: either may land
    # first.
    await fake_telegram.wait_for_text(OWNER_CHAT, "Reminder: stretch")
    texts = [m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT)]
    assert texts.count("Reminder: stretch") == 1
    assert fake_telegram.sent_messages(424242) == []


async def test_a_job_run_waits_for_the_chats_running_turn(
    start_palui, fake_telegram, fake_model
) -> None:
    def brain(request: ModelRequest) -> Script:
        if is_job_run(request):
            return Script(text="tick")
        return Script(text="slow answer", delay=3)

    fake_model.brain = brain
    palui = await start_palui()
    await palui.app.serving.wait()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "take your time")
    await fake_model.wait_for_request(count=1)
    await add_job(palui.app, soon(), "say tick")  # due while the chat's turn runs
    messages = await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=20)
    assert [m["text"] for m in messages] == ["slow answer", "⏰ Job #1\ntick"]


async def test_a_job_run_may_create_jobs_only_when_the_operator_allows_it(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = lambda request: Script(text="done")
    palui = await start_palui(PALUI_JOBS_MAY_CREATE_JOBS="true")
    await palui.app.serving.wait()
    await add_job(palui.app, soon(), "plan tomorrow")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=20)
    [request] = [r for r in fake_model.requests if is_job_run(r)]
    assert "palui__schedule_job" in request.tool_names
    assert "palui__delete_job" not in request.tool_names


async def test_the_model_lists_jobs_and_deleting_one_asks_first(
    start_palui, fake_telegram, fake_model
) -> None:
    def brain(request: ModelRequest) -> Script:
        results = tool_results(request)
        if not results:
            return call("palui__list_jobs")
        if len(results) == 1:
            return call("palui__delete_job", job_id=1)
        return Script(text=f"Listed: {results[0]} / {results[1]}")

    fake_model.brain = brain
    palui = await start_palui()
    job = await add_job(palui.app, "0 8 * * *", "morning summary")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "delete my morning job")
    card = await wait_for_card(fake_telegram)
    assert "palui__delete_job  (destructive)" in card["text"]
    assert await palui.app.store.jobs.get(job.id) is not None

    fake_telegram.push_callback(
        OWNER_CHAT, OWNER_ID, card["message_id"], buttons(card)["✅ Approve"]
    )
    answer = await final_text(fake_telegram, "Listed:")
    assert "#1 [on] every day at 08:00 (UTC)" in answer and "morning summary" in answer
    assert "Deleted job #1 (every day at 08:00 (UTC))." in answer
    assert await palui.app.store.jobs.get(job.id) is None
    assert palui.app.jobs._scheduler.get_job(f"job-{job.id}") is None
