"""The writes a turn's end makes, built once and run with bind parameters, store what they are
given: times as aware UTC through the column's type, a value left out kept rather than set to
NULL, a taint's first source kept. Over both databases, read back through the models."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from sqlalchemy import select

from palui.db import Store
from palui.db.models import CallRecordRow, InboxUpdate, OutboxMessage, Turn
from palui.domain import CallChange, CallStage, CallStatus, StageEntry, Taint, TurnStatus
from palui.domain.turn_record import CallKey, TurnEnd
from tests.toolkit import ADD, CHAT, running_turn

BERLIN = timezone(timedelta(hours=2))
T0 = datetime(2026, 12, 1, 14, 0, tzinfo=BERLIN)  # 12:00 UTC


async def test_a_call_record_reads_back_as_written_through_each_path(store: Store) -> None:
    await running_turn(store)
    fence = await store.leases.take(CHAT, "a:1:x", ttl_s=600)
    assert fence is not None
    policy = CallChange(ADD, StageEntry(CallStage.POLICY, "allow"), decision="allow", at=T0)
    out = CallChange(
        ADD, StageEntry(CallStage.EXECUTE, "running"), status=CallStatus.RUNNING,
        sends_out=True, arguments='{"title": "a"}', went_out=True, at=T0 + timedelta(seconds=1),
    )  # fmt: skip
    row_id = await store.tool_calls.fenced(fence).save(
        CallKey("t1", CHAT, 1, "c1"), out, earlier=[policy], fresh=True
    )
    done = CallChange(
        ADD, StageEntry(CallStage.EXECUTE, "ok"), settles=True, status=CallStatus.OK,
        result="added a", duration_s=0.25, at=T0 + timedelta(seconds=2),
    )  # fmt: skip
    assert await store.tool_calls.save(CallKey("t1", CHAT, 1, "c1"), done, row_id=row_id) == row_id
    post = CallChange(ADD, StageEntry(CallStage.POST_HOOK, "ok"), at=T0 + timedelta(seconds=3))
    assert await store.tool_calls.save(CallKey("t1", CHAT, 1, "c1"), post) == row_id  # looked up

    async with store.db.session() as s:
        [row] = list(await s.scalars(select(CallRecordRow)))
    assert (row.id, row.turn_id, row.chat_id, row.step, row.call_id) == (
        row_id,
        "t1",
        CHAT,
        1,
        "c1",
    )
    assert (row.status, row.decision, row.result) == ("ok", "allow", "added a")
    assert row.sends_out is True and row.arguments == '{"title": "a"}'
    assert row.model_arguments is None and row.tool_class is None and row.reason is None
    assert row.created_at == T0 and row.created_at.tzinfo == UTC
    assert row.started_at == T0 + timedelta(seconds=1)
    assert row.ended_at == T0 + timedelta(seconds=2) and row.duration_ms == 250
    stages = [(stage["stage"], stage["outcome"]) for stage in json.loads(row.stages)]
    assert stages == [("policy", "allow"), ("execute", "ok"), ("post_hook", "ok")]


async def test_a_turns_end_records_a_taint_source_only_where_none_was(store: Store) -> None:
    web = Taint("mcp-web")
    await running_turn(store, "t1", update_id=1)
    await running_turn(store, "t2", update_id=2)
    await running_turn(store, "t3", update_id=3)
    async with store.db.session() as s, s.begin():
        (await s.get_one(Turn, "t2")).taint_source = "an earlier message"
    await store.turns.finish(TurnEnd("t1", TurnStatus.DONE, [1], reply="one", taint=web))
    await store.turns.finish(TurnEnd("t2", TurnStatus.DONE, [2], reply="two", taint=web))
    await store.turns.finish(TurnEnd("t3", TurnStatus.FAILED, [3], error="boom"))
    async with store.db.session() as s:
        turns = {t.id: t for t in await s.scalars(select(Turn))}
    assert (turns["t1"].tainted, turns["t1"].taint_source) == (True, web.label)
    assert (turns["t2"].tainted, turns["t2"].taint_source) == (True, "an earlier message")
    assert (turns["t3"].tainted, turns["t3"].taint_source) == (False, None)
    assert (turns["t3"].status, turns["t3"].error) == ("failed", "boom")
    assert all(t.ended_at is not None and t.ended_at.tzinfo == UTC for t in turns.values())


async def test_a_part_recorded_without_a_message_id_keeps_the_last_one(store: Store) -> None:
    await running_turn(store)
    ended = await store.turns.finish(TurnEnd("t1", TurnStatus.DONE, [1], reply="a\n\nb"))
    assert ended is not None and ended.alone
    outbox_id = ended.item.id
    await store.outbox.part_sent(outbox_id, 1, done=False, message_id=70)
    async with store.db.session() as s:
        row = await s.get_one(OutboxMessage, outbox_id)
        assert (row.parts_sent, row.last_message_id, row.sent_at) == (1, 70, None)
    await store.outbox.part_sent(outbox_id, 2, done=True)
    async with store.db.session() as s:
        row = await s.get_one(OutboxMessage, outbox_id)
    assert (row.parts_sent, row.last_message_id) == (2, 70)
    assert row.sent_at is not None and row.sent_at.tzinfo == UTC


async def test_marking_updates_done_names_their_turn_and_leaves_the_rest(store: Store) -> None:
    for update_id in (1, 2, 3):
        assert await store.inbox.add(update_id, CHAT, 9, {"update_id": update_id})
    assert not await store.inbox.add(2, CHAT, 9, {"update_id": 2})  # a redelivery
    await store.inbox.mark_done([1, 3], "t9")
    async with store.db.session() as s:
        rows = {r.update_id: r for r in await s.scalars(select(InboxUpdate))}
    assert {k: (r.status, r.turn_id) for k, r in rows.items()} == {
        1: ("done", "t9"),
        2: ("pending", None),
        3: ("done", "t9"),
    }
    assert rows[1].handled_at is not None and rows[1].handled_at.tzinfo == UTC
    assert rows[2].handled_at is None and rows[2].received_at.tzinfo == UTC
    assert (rows[2].chat_id, rows[2].user_id, rows[2].payload) == (CHAT, 9, '{"update_id":2}')
