"""The rest of a turn's writes are fenced too: its start, its calls' records and the settling of
its ledger claims. A holder whose chat lease another process took over (it stalled past the
lapse) changes none of them, and each gets `LeaseLost`; the lease condition rides in the
write's own statement. And a chat's worker sends its replies under its chat lease: no other
process sends that chat's outbox meanwhile. Over both databases; the turn's end, pause and
claims are in tests/chat/test_fenced_leases.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from palui.db import Store
from palui.db.models import ActionRow, CallRecordRow, ChatLease, InboxUpdate, MessageRow, Turn
from palui.domain import CallChange, CallStatus, Fence
from palui.domain.turn_record import CallKey, TurnStart
from palui.errors import LeaseLost
from tests.toolkit import ADD, CHAT, running_turn, take_over
from tests.toolkit import row_count as count


async def fenced(store: Store) -> Fence:
    fence = await store.leases.take(CHAT, "a:1:x", ttl_s=600)
    assert fence is not None
    return fence


async def test_a_stale_fence_starts_no_turn_and_a_current_one_does(store: Store) -> None:
    await store.inbox.add(1, CHAT, 1, {"update_id": 1, "text": "hi"})
    session = await store.chats.current_session(CHAT)
    stale = await fenced(store)
    current = await take_over(store, CHAT)

    with pytest.raises(LeaseLost):
        await store.turns.start(TurnStart("t1", CHAT, [(1, "hi")], session_id=session, fence=stale))
    with pytest.raises(LeaseLost):
        await store.turns.start_chat_turn(TurnStart("t2", CHAT, [(1, "hi")], fence=stale))
    assert await count(store, Turn) == 0
    assert await count(store, MessageRow) == 0
    async with store.db.session() as s:
        assert list(await s.scalars(select(InboxUpdate.turn_id))) == [None]  # not claimed
    assert [item.turn_id for item in await store.inbox.pending(CHAT)] == [None]

    await store.turns.start_chat_turn(TurnStart("t3", CHAT, [(1, "hi")], fence=current))
    async with store.db.session() as s:
        assert list(await s.scalars(select(Turn.id))) == ["t3"]
    # Claimed by the message's row (the inbox row names its turn once done).
    assert [item.turn_id for item in await store.inbox.pending(CHAT)] == ["t3"]


def change(status: CallStatus, result: str | None = None) -> CallChange:
    return CallChange(ADD, status=status, result=result, went_out=status is CallStatus.RUNNING)


async def test_a_stale_fence_writes_no_call_record(store: Store) -> None:
    await running_turn(store)
    stale = await fenced(store)
    records: Any = store.tool_calls.fenced(stale)
    row_id = await records.save(
        CallKey("t1", CHAT, 1, "c1"), change(CallStatus.RUNNING), fresh=True
    )
    current = await take_over(store, CHAT)

    with pytest.raises(LeaseLost):  # the running call's end
        await records.save(
            CallKey("t1", CHAT, 1, "c1"), change(CallStatus.OK, "late"), row_id=row_id
        )
    with pytest.raises(LeaseLost):  # a new call's first write
        await records.save(CallKey("t1", CHAT, 2, "c2"), change(CallStatus.OK, "late"), fresh=True)
    async with store.db.session() as s:
        rows = list(await s.execute(select(CallRecordRow.call_id, CallRecordRow.status)))
    assert [tuple(row) for row in rows] == [("c1", "running")]  # as recovery will find it

    ours = store.tool_calls.fenced(current)
    await ours.save(
        CallKey("t1", CHAT, 1, "c1"), change(CallStatus.UNKNOWN, "interrupted"), row_id=row_id
    )
    async with store.db.session() as s:
        assert list(await s.scalars(select(CallRecordRow.status))) == ["unknown"]


async def test_a_stale_fence_does_not_settle_a_ledger_action(store: Store) -> None:
    await running_turn(store)
    stale = await fenced(store)
    claim = await store.actions.fenced(stale).claim("key", CHAT, ADD, "{}", "t1")
    assert claim.action_id is not None
    await take_over(store, CHAT)

    with pytest.raises(LeaseLost):
        await store.actions.fenced(stale).settle(claim.action_id, "completed", "late")
    async with store.db.session() as s:
        action = await s.get_one(ActionRow, claim.action_id)
    assert (action.state, action.result) == ("in_progress", None)  # recovery's to settle


# -- a chat's replies go out under its chat lease ----------------------------------------------


async def test_no_other_process_takes_the_delivery_lease_while_the_chat_lease_is_held(
    store: Store,
) -> None:
    held = await store.leases.take(CHAT, "a:1:x", ttl_s=600)
    assert held is not None
    assert await store.delivery_leases.take(CHAT, "b:2:y", ttl_s=600) is None
    ours = await store.delivery_leases.take(CHAT, "a:1:x", ttl_s=600)  # this process's own
    assert ours is not None
    await store.delivery_leases.release(CHAT, "a:1:x", ours.generation)

    async with store.db.session() as s, s.begin():  # lapsed, not given up: it may renew
        await s.execute(update(ChatLease).values(expires_at=datetime.now(UTC) - timedelta(1)))
    assert await store.delivery_leases.take(CHAT, "b:2:y", ttl_s=600) is None
    await store.leases.release(CHAT, "a:1:x", held.generation)
    assert await store.delivery_leases.take(CHAT, "b:2:y", ttl_s=600) is not None


async def test_the_chat_lease_is_not_taken_while_another_process_sends_the_outbox(
    store: Store,
) -> None:
    sending = await store.delivery_leases.take(CHAT, "b:2:y", ttl_s=600)
    assert sending is not None
    assert await store.leases.take(CHAT, "a:1:x", ttl_s=600) is None
    await store.delivery_leases.release(CHAT, "b:2:y", sending.generation)
    assert await store.leases.take(CHAT, "a:1:x", ttl_s=600) is not None


async def test_a_stale_chat_fence_records_no_reply_part(store: Store) -> None:
    outbox_id = await store.outbox.add(CHAT, "a reply")
    stale = await fenced(store)
    await take_over(store, CHAT)
    with pytest.raises(LeaseLost):
        await store.outbox.part_sent(outbox_id, 1, done=True, fence=stale, chat_lease=True)
    [pending] = await store.outbox.pending(CHAT)
    assert pending.parts_sent == 0  # the new holder sends it, from what is recorded
