"""The model provider down (DESIGN §1.13, Operations): the chat is told once, its messages are
kept and answered when the model answers again (one probe, with back-off), nothing twice; a
turn that already changed something says so as before, and its call is never run again."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import structlog
from structlog.testing import LogCapture

from palui.db.models import CallRecordRow
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.toolkit import GITHUB_SECRET, post_json, row_count, stop_palui, tool_results, turn_status
from tests.toolkit import script_call as call

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
    counted = palui.app.metrics.render().decode()
    assert 'palui_turns_total{kind="chat",outcome="waits"} 1.0' in counted  # kept, not failed
    assert 'palui_turns_total{kind="chat",outcome="failed"}' not in counted

    # Meanwhile: kept, no turn, no second notice; only the probe asks the model.
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "and now?")
    await fake_model.wait_for(lambda: sum(map(is_ping, fake_model.requests)) >= 2, "probes")
    await palui.app.chats.wait_idle(OWNER_CHAT)
    assert [r for r in fake_model.requests if not is_ping(r)] == turns
    # A wait is no failed attempt: a second outage must not earn these an apology.
    kept = await palui.app.store.inbox.pending(OWNER_CHAT)
    assert [item.attempts for item in kept] == [0, 0]
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


def job_run_of(request: ModelRequest) -> bool:
    return "scheduled job #" in request.last_user_text


async def test_a_job_run_waits_for_the_model_told_once_and_runs_once_when_it_is_back(
    with_notes, mcp_in_process, store, start_palui, fake_telegram, fake_model, request
) -> None:
    down = True

    def brain(request: ModelRequest) -> Script:
        if down:
            return Script(status=503, error="overloaded")
        if is_ping(request):
            return Script(text="pong")
        if not job_run_of(request):
            return Script(text="chat answered")
        if not tool_results(request):
            return call("mcp-notes__list_notes")
        return Script(text=f"notes: {tool_results(request)[-1]}")

    fake_model.brain = brain
    now = datetime.now(UTC).replace(microsecond=0)
    job = await store.jobs.create(
        OWNER_CHAT, "list my notes", "every 1h", "UTC", 100_000, created_by="t", anchor_at=now
    )
    assert await store.jobs.claim_run(job, now)  # due: the chat's worker runs it at start
    palui = await start_palui()
    records = LogCapture()  # every line's fields, with those bound from context
    before = structlog.get_config()
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, records])
    request.addfinalizer(lambda: structlog.configure(**before))
    assert (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]["text"] == TOLD
    [run] = await palui.app.store.jobs.runs(job.id)
    assert (run.status, run.turn_id) == ("queued", None)  # the same row, waiting to start again

    # A message meanwhile: kept too, and the chat, already told, is not told again.
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "and now?")
    await fake_model.wait_for(lambda: sum(map(is_ping, fake_model.requests)) >= 2, "probes")
    await palui.app.chats.wait_idle(OWNER_CHAT)
    assert len(fake_telegram.sent_messages(OWNER_CHAT)) == 1
    probes = [line for line in records.entries if line["event"] == "model_still_down"]
    assert probes and not any("turn_id" in line for line in probes)  # the probe is no turn's

    down = False
    await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    await palui.app.chats.wait_idle(OWNER_CHAT)
    texts = [m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT)]
    assert texts[0] == TOLD and len(texts) == 3  # the run and the message, each answered once
    assert texts[1].startswith(f"⏰ Job #{job.id}\nnotes: ") and "Groceries" in texts[1]
    assert texts[2] == "chat answered"
    [run] = await palui.app.store.jobs.runs(job.id)
    assert (run.status, run.turn_status) == ("started", "done")
    assert await row_count(palui.app.store, CallRecordRow) == 1  # its tool call ran once


async def test_a_webhook_summary_waits_for_the_model_across_a_restart_and_is_posted_once(
    tmp_path, monkeypatch, start_palui, fake_telegram, fake_model
) -> None:
    config = tmp_path / "palui.toml"
    config.write_text(f'[webhooks.github]\nchat_id = {OWNER_CHAT}\nsecret_env = "HOOK_SECRET"\n')
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    monkeypatch.setenv("HOOK_SECRET", GITHUB_SECRET)
    down, summaries = True, []

    def brain(request: ModelRequest) -> Script:
        if down:
            return Script(status=503, error="overloaded")
        if is_ping(request):
            return Script(text="pong")
        summaries.append(request)
        return Script(text="ana pushed to palui.")

    fake_model.brain = brain
    palui = await start_palui()
    await palui.app.serving.wait()  # the HTTP server listens (getUpdates may come first)
    store, base = palui.app.store, str(palui.app.http.url)
    headers = {"X-Palui-Secret": GITHUB_SECRET, "Content-Type": "application/json"}
    status, body = await post_json(f"{base}/webhooks/github", b'{"pusher": "ana"}', headers)
    assert status == 202
    assert (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]["text"] == TOLD
    await fake_model.wait_for(lambda: any(map(is_ping, fake_model.requests)), "a probe")
    delivery = await store.webhooks.get(body["delivery_id"])
    assert delivery is not None and delivery.turn_id is not None
    assert await turn_status(store, delivery.turn_id) == "failed"
    assert delivery.attempts == 0  # a wait for the model is no failed try (palui.chat.attempts)
    assert [d.id for d in await store.webhooks.pending(OWNER_CHAT)] == [delivery.id]

    # Palui restarts while the delivery waits; the model is back meanwhile.
    await stop_palui(palui)
    down = False
    palui = await start_palui()
    [_, summary] = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert summary["text"] == "📨 Webhook github\nana pushed to palui."
    await palui.app.chats.wait_idle(OWNER_CHAT)
    assert len(fake_telegram.sent_messages(OWNER_CHAT)) == 2  # told once, summarised once
    assert await palui.app.store.webhooks.pending(OWNER_CHAT) == []
    assert len(summaries) == 1
