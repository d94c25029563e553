"""Fenced leases: each take of a chat's lease gets a new generation, a turn carries the one it
runs under, and a turn whose lease another process took over (it stalled past the lapse) can
neither claim, pause nor finish: it ends without a word, and what the new holder recovered
stands. The same for the outbox's delivery lease. In-process, over both databases; the same
with two real `palui run` processes and SIGSTOP is in tests/e2e/test_fenced_processes.py."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from palui.chat.leases import ChatLeases
from palui.db import Store
from palui.db.models import (
    ActionRow,
    ApprovalRow,
    ChatLease,
    DeliveryLease,
    MessageRow,
    OutboxMessage,
    PausedTurn,
    Turn,
)
from palui.domain import Fence, Message, NewApproval, TurnStatus
from palui.domain.turn_record import TurnEnd
from palui.errors import LeaseLost
from tests import toolkit
from tests.fakes.memory_channel import in_memory_settings, running_palui
from tests.toolkit import (
    ADD,
    CHAT,
    DELETE,
    ELSEWHERE,
    running_turn,
    said,
    take_over,
    turn_runner,
    turn_status,
    wait_until,
)
from tests.toolkit import notes_functions as notes
from tests.toolkit import row_count as count

# -- the lease row ---------------------------------------------------------------------------------


async def test_each_take_gets_a_new_generation_and_a_renewal_keeps_it(store: Store) -> None:
    first = await store.leases.take(CHAT, "a:1:x", ttl_s=600)
    assert first is not None
    assert await store.leases.take(CHAT, "b:2:y", ttl_s=600) is None  # held: no take
    assert await store.leases.renew(first, ttl_s=600)
    await store.leases.release(CHAT, first.holder, first.generation)
    second = await store.leases.take(CHAT, "b:2:y", ttl_s=600)
    assert second is not None and second.generation == first.generation + 1
    assert not await store.leases.renew(first, ttl_s=600)  # the old take can't come back
    async with store.db.session() as s, s.begin():  # it lapsed: another holder takes it
        await s.execute(update(ChatLease).values(expires_at=datetime.now(UTC)))
    third = await store.leases.take(CHAT, ELSEWHERE, ttl_s=600)
    assert third is not None and third.generation == second.generation + 1
    async with store.db.session() as s:
        row = await s.get_one(ChatLease, CHAT)
    assert (row.holder, row.generation) == (ELSEWHERE, third.generation)


async def test_confirm_asks_the_database_only_when_the_last_renewal_is_old(store: Store) -> None:
    now = [100.0]
    lost: list[int] = []
    leases = ChatLeases(store.leases, ttl_s=60, clock=lambda: now[0])
    async with leases.hold(CHAT, lost.append) as fence:
        assert fence is not None
        await take_over(store, CHAT)
        await leases.confirm(fence)  # renewed a moment ago: trusted without a query
        now[0] += 31  # e.g. stopped with SIGSTOP for longer than half a lapse
        with pytest.raises(LeaseLost):
            await leases.confirm(fence)
        assert lost == [CHAT] and not leases.current(fence)
        with pytest.raises(LeaseLost):
            await leases.confirm(fence)
    async with store.db.session() as s:
        assert (await s.get_one(ChatLease, CHAT)).holder == ELSEWHERE  # not released by us


# -- each write a turn makes, under a stale fence --------------------------------------------------


async def test_a_stale_fence_cannot_finish_a_turn_and_a_current_one_can(store: Store) -> None:
    await running_turn(store)
    fence = await store.leases.take(CHAT, "a:1:x", ttl_s=600)
    assert fence is not None
    await take_over(store, CHAT)
    with pytest.raises(LeaseLost):
        await store.turns.finish(TurnEnd("t1", TurnStatus.DONE, [1], reply="late", fence=fence))
    assert await turn_status(store, "t1") == "running"
    assert await count(store, MessageRow, MessageRow.role == "assistant") == 0
    assert await count(store, OutboxMessage) == 0
    assert [item.update_id for item in await store.inbox.pending(CHAT)] == [1]

    async with store.db.session() as s:
        current = Fence(CHAT, ELSEWHERE, (await s.get_one(ChatLease, CHAT)).generation)
    assert await store.turns.finish(TurnEnd("t1", TurnStatus.DONE, [1], reply="ok", fence=current))
    assert await turn_status(store, "t1") == "done"
    assert await store.inbox.pending(CHAT) == []


def approval(approval_id: str = "ap1") -> NewApproval:
    return NewApproval(
        approval_id, f"tok-{approval_id}", "c1", DELETE, "{}", "digest", "destructive", False,
        "why", "decision", datetime.now(UTC) + timedelta(hours=1),
    )  # fmt: skip


async def test_a_stale_fence_cannot_pause_claim_an_action_or_claim_an_approved_call(
    store: Store,
) -> None:
    await running_turn(store)
    fence = await store.leases.take(CHAT, "a:1:x", ttl_s=600)
    assert fence is not None
    await store.approvals.pause_turn("t1", CHAT, "{}", [approval()], fence=fence)
    assert await store.approvals.decide("ap1", True, "@owner", datetime.now(UTC))
    await take_over(store, CHAT)

    with pytest.raises(LeaseLost):
        await store.approvals.claim_execution("ap1", fence)
    with pytest.raises(LeaseLost):
        await store.actions.claim("key", CHAT, ADD, "{}", "t1", fence)
    await running_turn(store, "t2", 2)
    with pytest.raises(LeaseLost):
        await store.approvals.pause_turn("t2", CHAT, "{}", [approval("ap2")], fence=fence)

    async with store.db.session() as s:
        assert (await s.get_one(ApprovalRow, "ap1")).status == "approved"  # not used up
        assert await s.get(ApprovalRow, "ap2") is None
        assert await s.get(PausedTurn, "t2") is None
        assert (await s.get_one(Turn, "t2")).status == "running"
        assert list(await s.scalars(select(ActionRow))) == []
    unfenced = store.actions.fenced(None)  # a turn run under no lease claims as before
    assert (await unfenced.claim("key", CHAT, ADD, "{}", "t1")).state == "new"


async def test_a_stale_delivery_fence_records_no_part(store: Store) -> None:
    outbox_id = await store.outbox.add(CHAT, "a reply")
    fence = await store.delivery_leases.take(CHAT, "a:1:x", ttl_s=600)
    assert fence is not None
    await take_over(store, CHAT, DeliveryLease)
    with pytest.raises(LeaseLost):
        await store.outbox.part_sent(outbox_id, 1, done=True, fence=fence)
    [pending] = await store.outbox.pending(CHAT)
    assert pending.parts_sent == 0  # the new holder sends it, from what is recorded


# -- through the turn runner -----------------------------------------------------------------------


async def test_a_turn_taken_over_before_its_write_call_never_runs_it(store: Store) -> None:
    toolset = notes()

    async def taken_over_meanwhile(messages: list[Message]) -> Any:
        await take_over(store, CHAT)  # while the model thinks, this process stalls
        return toolkit.call(ADD, {"title": "milk"})

    model = toolkit.ScriptedModel([taken_over_meanwhile, toolkit.answer("Added.")])
    turns, _ = turn_runner(store, model, toolset)
    leases = ChatLeases(store.leases, ttl_s=60)
    async with leases.hold(CHAT) as fence:
        with pytest.raises(LeaseLost):
            await turns.run_chat_turn(CHAT, said(1, "note milk"), fence)
    assert toolset.calls == []  # the ledger claim was refused: nothing went out
    assert len(model.calls) == 1
    assert await count(store, OutboxMessage) == 0


async def test_a_turn_taken_over_during_its_call_commits_no_end(store: Store) -> None:
    async def add_note(title: str) -> str:
        await take_over(store, CHAT)  # the call is slow; this process stalls past the lapse
        return f"added {title}"

    toolset = toolkit.FunctionToolset("mcp-n", {"add_note": add_note, "delete_note": add_note})
    model = toolkit.ScriptedModel([toolkit.call(ADD, {"title": "milk"}), toolkit.answer("Added.")])
    turns, _ = turn_runner(store, model, toolset)
    leases = ChatLeases(store.leases, ttl_s=60)
    async with leases.hold(CHAT) as fence:
        with pytest.raises(LeaseLost):
            await turns.run_chat_turn(CHAT, said(1, "note milk"), fence)
    assert toolset.calls == [("add_note", {"title": "milk"})]
    async with store.db.session() as s:
        assert list(await s.scalars(select(Turn.status))) == ["running"]  # the new holder's
        replies = await s.scalars(select(MessageRow).where(MessageRow.role == "assistant"))
        assert list(replies) == []
    assert await count(store, OutboxMessage) == 0


async def test_a_resumed_turn_taken_over_does_not_run_its_approved_call(store: Store) -> None:
    toolset = notes()
    model = toolkit.ScriptedModel([toolkit.call(DELETE, {"id": 3}), toolkit.answer("Deleted.")])
    turns, channel = turn_runner(store, model, toolset)
    leases = ChatLeases(store.leases, ttl_s=60)
    async with leases.hold(CHAT) as fence:
        await turns.run_chat_turn(CHAT, said(1, "delete note 3"), fence)
    assert "Approval needed" in channel.cards[0].text
    [record] = await store.approvals.pending(CHAT)
    assert await store.approvals.decide(record.id, True, "@owner", datetime.now(UTC))
    async with leases.hold(CHAT) as fence:
        assert fence is not None
        await take_over(store, CHAT)
        with pytest.raises(LeaseLost):
            await turns.resume(CHAT, record.turn_id, fence)
    assert toolset.calls == []
    async with store.db.session() as s:
        assert (await s.get_one(ApprovalRow, record.id)).status == "approved"


async def test_a_renewal_that_finds_the_lease_taken_cancels_the_running_turn(
    store: Store,
) -> None:
    cancelled = asyncio.Event()

    async def stalls_until_cancelled(messages: list[Message]) -> Any:
        await take_over(store, CHAT)
        try:
            await asyncio.Event().wait()  # a long model call
        finally:
            cancelled.set()

    model = toolkit.ScriptedModel([stalls_until_cancelled])
    turns, _ = turn_runner(store, model, notes())
    leases = ChatLeases(store.leases, ttl_s=0.3)  # renewed every 0.1 s
    async with leases.hold(CHAT, turns.lease_lost) as fence:
        with pytest.raises(LeaseLost):
            await asyncio.wait_for(turns.run_chat_turn(CHAT, said(1, "think"), fence), 30)
    assert cancelled.is_set()
    assert await count(store, OutboxMessage) == 0
    async with store.db.session() as s:
        assert list(await s.scalars(select(Turn.status))) == ["running"]


# -- the worker keeps the lease while busy ---------------------------------------------------------


async def test_the_worker_keeps_the_lease_between_messages_and_gives_it_up_when_idle(
    database_url: str, tmp_path: Path
) -> None:
    settings = in_memory_settings(database_url, str(tmp_path / "data"))
    model = toolkit.ScriptedModel(forever=toolkit.answer("ok"))
    async with running_palui(settings, model) as (app, chat):
        recoveries = []
        taken = app.chats._recovery.chat_taken

        async def counted(chat_id: int) -> Any:
            recoveries.append(chat_id)
            return await taken(chat_id)

        app.chats._recovery.chat_taken = counted
        await chat.send("one")
        await chat.send("two")
        await chat.send("three")
        assert chat.texts() == ["ok", "ok", "ok"]
        async with app.db.session() as s:
            lease = await s.get_one(ChatLease, chat.chat_id)
        assert lease.generation == 1 and lease.holder  # one take for the three turns
        assert recoveries == [chat.chat_id]  # and one recovery check

        async def released() -> bool:
            async with app.db.session() as s:
                return (await s.get_one(ChatLease, chat.chat_id)).holder == ""

        await wait_until(released)  # after the idle grace
