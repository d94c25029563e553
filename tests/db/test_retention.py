"""Retention (`[retention]`, palui.db.retention): the daily prune deletes finished records past
their days, keeps recent ones, and never deletes a row that pending work still needs — on
SQLite and PostgreSQL (the `store` fixture runs both)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from palui.app.parts import retention_days
from palui.chat.sweepers import prune_if_due
from palui.config import Settings
from palui.db import Store
from palui.db import retention as retention_module
from palui.db.models import (
    ApprovalEdit,
    ApprovalRow,
    CallRecordRow,
    Chat,
    ChatSession,
    InboxUpdate,
    JobRun,
    MemorySlice,
    ModelCall,
    OutboxMessage,
    PausedTurn,
    RecallCheck,
    SendCapNotice,
    StopRequest,
    StrangerNotice,
    Turn,
    WebhookDelivery,
)
from palui.db.retention import RetentionDays

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
OLD = NOW - timedelta(days=200)  # past every default
RECENT = NOW - timedelta(hours=1)
CHAT = 42


def approval(id: str, turn_id: str, status: str) -> ApprovalRow:
    return ApprovalRow(
        id=id, token=f"tok{id}", turn_id=turn_id, chat_id=CHAT, call_id="c1", tool="t",
        arguments="{}", digest="d", tool_class="write", why="", decision_id="x", status=status,
        created_at=OLD, expires_at=OLD + timedelta(days=1),
    )  # fmt: skip


def edit(id: str, status: str) -> ApprovalEdit:
    return ApprovalEdit(
        id=id, token=f"tok{id}", approval_id="a-old", card_token="tok", chat_id=CHAT, user_id=1,
        user_name="ana", status=status, fields="[]", arguments="{}", created_at=OLD,
        updated_at=OLD,
    )  # fmt: skip


def call_record(turn_id: str, status: str, at: datetime) -> CallRecordRow:
    return CallRecordRow(
        turn_id=turn_id, chat_id=CHAT, step=1, call_id=f"{turn_id}-{status}", tool="t",
        status=status, created_at=at,
    )  # fmt: skip


def run(job_id: int, status: str, at: datetime, turn_id: str | None = None) -> JobRun:
    return JobRun(
        job_id=job_id, chat_id=CHAT, scheduled_for=at, status=status, claimed_at=at,
        turn_id=turn_id,
    )  # fmt: skip


async def seed(store: Store) -> None:
    """For each table: an old finished row (to go), a recent one, and old ones still needed."""
    async with store.db.session() as s, s.begin():
        s.add(Chat(id=CHAT))
        await s.flush()
        session = ChatSession(chat_id=CHAT)
        s.add(session)
        await s.flush()
        for turn_id, status in (("done", "done"), ("paused", "awaiting_approval")):
            s.add(Turn(id=turn_id, chat_id=CHAT, session_id=session.id, kind="chat",
                       status=status, started_at=OLD))  # fmt: skip
        s.add(Turn(id="running", chat_id=CHAT, session_id=session.id, kind="chat",
                   status="running", started_at=OLD))  # fmt: skip
        body = {"webhook": "alerts", "chat_id": CHAT, "body": "x" * 100}
        s.add_all(
            [
                WebhookDelivery(id=1, received_at=OLD, handled_at=OLD, **body),  # goes
                WebhookDelivery(id=2, received_at=RECENT, handled_at=RECENT, **body),
                WebhookDelivery(id=3, received_at=OLD, **body),  # not summarised yet
                InboxUpdate(
                    update_id=1,
                    chat_id=CHAT,
                    payload="{}",
                    status="done",
                    received_at=OLD,
                    handled_at=OLD,
                ),  # goes
                InboxUpdate(
                    update_id=2,
                    chat_id=CHAT,
                    payload="{}",
                    status="done",
                    received_at=RECENT,
                    handled_at=RECENT,
                ),
                InboxUpdate(
                    update_id=3, chat_id=CHAT, payload="{}", status="pending", received_at=OLD
                ),  # unanswered
                InboxUpdate(
                    update_id=4,
                    chat_id=CHAT,
                    payload="{}",
                    status="done",
                    turn_id="paused",
                    received_at=OLD,
                    handled_at=OLD,
                ),  # answered by the paused turn
                OutboxMessage(id=1, chat_id=CHAT, text="a", created_at=OLD, sent_at=OLD),  # goes
                OutboxMessage(id=2, chat_id=CHAT, text="b", created_at=RECENT, sent_at=RECENT),
                OutboxMessage(id=3, chat_id=CHAT, text="c", created_at=OLD),  # unsent
                call_record("done", "ok", OLD),  # goes
                call_record("done", "failed", RECENT),
                call_record("paused", "held", OLD),  # its card waits
                call_record("paused", "ok", OLD),  # an earlier call of the paused turn
                call_record("running", "running", OLD),
                ModelCall(turn_id="done", model="m", created_at=OLD),  # goes
                ModelCall(turn_id=None, model="m", created_at=OLD),  # goes (a summary's)
                ModelCall(turn_id="done", model="m", created_at=RECENT),
                ModelCall(turn_id="running", model="m", created_at=OLD),
                RecallCheck(chat_id=CHAT, outcome="used", created_at=OLD),  # goes
                RecallCheck(chat_id=CHAT, outcome="used", created_at=RECENT),
                approval("a-old", "done", "denied"),  # goes
                approval("a-pending", "paused", "pending"),
                PausedTurn(turn_id="done", chat_id=CHAT, state="{}", created_at=OLD),  # goes
                PausedTurn(turn_id="paused", chat_id=CHAT, state="{}", created_at=OLD),
                edit("e-done", "done"),  # goes
                edit("e-asking", "asking"),
                run(1, "started", OLD, "done"),  # goes: job 1 ran again later
                run(1, "started", OLD + timedelta(days=1), "done"),  # job 1's latest
                run(2, "skipped", OLD - timedelta(days=1)),  # goes
                run(2, "queued", OLD),  # claimed, not started
                run(3, "skipped", OLD - timedelta(days=1), "running"),
                run(3, "started", RECENT, "done"),
                StrangerNotice(user_id=7, day=OLD.date().isoformat()),  # goes
                StrangerNotice(user_id=7, day=NOW.date().isoformat()),
                SendCapNotice(chat_id=CHAT, day=OLD.date().isoformat()),  # goes
                SendCapNotice(chat_id=CHAT, day=NOW.date().isoformat()),
                StopRequest(turn_id="done", chat_id=CHAT, requested_at=OLD),  # goes
                StopRequest(turn_id="running", chat_id=CHAT, requested_at=OLD),
                MemorySlice(
                    chat_id=CHAT,
                    session_id=session.id,
                    first_message_id=1,
                    last_message_id=9,
                    reason="compaction",
                    save_state="pending",
                    created_at=OLD,
                    updated_at=OLD,
                ),  # an open slice
            ]
        )


async def remaining(store: Store) -> dict[str, Any]:
    async with store.db.session() as s:

        async def keys(column: Any) -> list[Any]:
            return sorted(await s.scalars(select(column)), key=str)

        return {
            "webhooks": await keys(WebhookDelivery.id),
            "inbox": await keys(InboxUpdate.update_id),
            "outbox": await keys(OutboxMessage.id),
            "calls": await keys(CallRecordRow.call_id),
            "model_calls": len(await keys(ModelCall.id)),
            "model_calls_turns": await keys(ModelCall.turn_id),
            "recall_checks": len(await keys(RecallCheck.id)),
            "approvals": await keys(ApprovalRow.id),
            "paused": await keys(PausedTurn.turn_id),
            "edits": await keys(ApprovalEdit.id),
            "runs": sorted((r.job_id, r.status) for r in await s.scalars(select(JobRun))),
            "strangers": await keys(StrangerNotice.day),
            "send_caps": await keys(SendCapNotice.day),
            "stops": await keys(StopRequest.turn_id),
            "slices": len(await keys(MemorySlice.id)),
            "turns": await keys(Turn.id),
        }


KEPT = {
    "webhooks": [2, 3],
    "inbox": [2, 3, 4],
    "outbox": [2, 3],
    "calls": ["done-failed", "paused-held", "paused-ok", "running-running"],
    "model_calls": 2,
    "model_calls_turns": ["done", "running"],
    "recall_checks": 1,
    "approvals": ["a-pending"],
    "paused": ["paused"],
    "edits": ["e-asking"],
    "runs": [(1, "started"), (2, "queued"), (3, "skipped"), (3, "started")],
    "strangers": [NOW.date().isoformat()],
    "send_caps": [NOW.date().isoformat()],
    "stops": ["running"],
    "slices": 1,
    "turns": ["done", "paused", "running"],  # turns are the chat's history: never pruned
}


async def test_old_rows_go_recent_ones_stay_and_pending_work_keeps_its_rows(
    store: Store,
) -> None:
    await seed(store)
    deleted = await store.retention.prune(RetentionDays(), NOW)
    assert await remaining(store) == KEPT
    assert deleted["webhook_deliveries"] == 1 and deleted["model_calls"] == 2
    assert await store.retention.prune(RetentionDays(), NOW) == {}  # nothing left to delete


async def test_zero_days_keeps_a_table_forever(store: Store) -> None:
    await seed(store)
    forever = RetentionDays(**dict.fromkeys(RetentionDays.__dataclass_fields__, 0))
    before = await remaining(store)
    assert await store.retention.prune(forever, NOW) == {}
    assert await remaining(store) == before
    await store.retention.prune(RetentionDays(webhook_days=0, outbox_days=0), NOW)
    after = await remaining(store)
    assert after["webhooks"] == before["webhooks"] and after["outbox"] == before["outbox"]
    assert after["inbox"] == KEPT["inbox"]


async def test_a_handled_webhook_delivery_and_its_replay_key_stay_for_its_days(
    store: Store,
) -> None:
    fresh = NOW - timedelta(minutes=5)
    async with store.db.session() as s, s.begin():
        s.add(WebhookDelivery(id=9, webhook="alerts", chat_id=CHAT, body="{}",
                              received_at=fresh, handled_at=fresh, replay_key="sig"))  # fmt: skip
    # A signature accepted 5 minutes ago stays refused as a replay: its row is kept.
    await store.retention.prune(RetentionDays(webhook_days=1), NOW)
    assert 9 in (await remaining(store))["webhooks"]
    await store.retention.prune(RetentionDays(webhook_days=1), NOW + timedelta(hours=23))
    assert 9 in (await remaining(store))["webhooks"]
    await store.retention.prune(RetentionDays(webhook_days=1), NOW + timedelta(days=1))
    assert 9 not in (await remaining(store))["webhooks"]


async def test_a_long_prune_goes_in_small_batches(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention_module, "BATCH", 3)
    async with store.db.session() as s, s.begin():
        s.add_all(RecallCheck(chat_id=CHAT, outcome="used", created_at=OLD) for _ in range(10))
        s.add_all(
            StrangerNotice(user_id=n, day=OLD.date().isoformat()) for n in range(7)
        )  # a two-column key
    deleted = await store.retention.prune(RetentionDays(), NOW)
    assert deleted == {"recall_checks": 10, "stranger_notices": 7}
    async with store.db.session() as s:
        assert await s.scalar(select(func.count()).select_from(RecallCheck)) == 0


async def test_one_process_prunes_a_day_and_the_next_day_again(store: Store) -> None:
    await seed(store)
    claims = await asyncio.gather(*(prune_if_due(store, RetentionDays(), NOW) for _ in range(4)))
    done = [c for c in claims if c is not None]
    assert len(done) == 1 and done[0]["outbox"] == 1  # the other three found it taken
    assert await prune_if_due(store, RetentionDays(), NOW + timedelta(hours=23)) is None
    assert await prune_if_due(store, RetentionDays(), NOW + timedelta(days=1)) == {}


def test_the_retention_section_sets_each_tables_days(tmp_path: Path) -> None:
    settings = Settings(retention={"webhook_days": 3, "calls_days": 0}, data_dir=tmp_path)
    days = retention_days(settings)
    assert (days.webhook_days, days.calls_days, days.inbox_days) == (3, 0, 30)
    with pytest.raises(ValueError, match="webhook_dayz"):
        Settings(retention={"webhook_dayz": 3})


async def test_the_daemon_prunes_after_its_start_when_the_last_prune_is_a_day_old(
    store: Store, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from palui.chat import sweepers
    from tests.fakes.memory_channel import in_memory_settings, running_palui
    from tests.toolkit import ScriptedModel, wait_until

    monkeypatch.setattr(sweepers, "PRUNE_DELAY_S", 0)  # a minute after the start, not now

    long_ago = datetime.now(UTC) - timedelta(days=200)
    async with store.db.session() as s, s.begin():
        s.add(OutboxMessage(id=1, chat_id=CHAT, text="a", created_at=long_ago, sent_at=long_ago))
        s.add(OutboxMessage(id=2, chat_id=CHAT, text="b", created_at=long_ago))  # unsent
    settings = in_memory_settings(database_url, str(tmp_path / "data"))
    async with running_palui(settings, ScriptedModel()) as (app, _):

        async def pruned() -> bool:  # the prune runs in the background: no event
            return (await remaining(app.store))["outbox"] == [2]

        await wait_until(pruned, timeout=30)
        assert not await app.store.retention.claim_daily(datetime.now(UTC))  # done for today
