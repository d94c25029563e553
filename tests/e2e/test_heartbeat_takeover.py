"""Process heartbeats: a chat (and its outbox) held by a process whose heartbeat stopped is taken
over within seconds, not when its lease lapses; a process that was only paused finds its late
writes refused (the fence). In-process over both databases with controllable clocks; with two
real `palui run` processes and SIGSTOP at the end."""

from __future__ import annotations

import asyncio
import signal
from datetime import UTC, datetime, timedelta

import pytest

from palui.chat.heartbeat import DEAD_AFTER_S, Heartbeat
from palui.chat.leases import ChatLeases
from palui.chat.recovery import Recovery
from palui.db import Store
from palui.db.heartbeats import HeartbeatRepo
from palui.db.models import ProcessHeartbeat
from palui.domain import TurnStatus
from palui.domain.turn_record import TurnEnd
from palui.errors import DatabaseError, LeaseLost
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.toolkit import CHAT, needs_postgres, running_turn, turn_status
from tests.toolkit import row_count as count


class Clocks:
    """The processes' clocks, moved by the test: wall (heartbeat rows) and monotonic."""

    def __init__(self) -> None:
        self.wall = datetime.now(UTC)
        self.mono = 1000.0

    def advance(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.mono += seconds

    def now(self) -> datetime:
        return self.wall

    def clock(self) -> float:
        return self.mono


class FlakyBeats(HeartbeatRepo):
    """The heartbeat table, unreachable while `down` (a database outage)."""

    down = False

    async def beat(self, holder: str, at: datetime) -> None:
        if self.down:
            raise DatabaseError("the database is not reachable")
        await super().beat(holder, at)


def process(
    store: Store, clocks: Clocks, name: str, repo: HeartbeatRepo | None = None
) -> tuple[Heartbeat, ChatLeases]:
    holder = f"host-{name}:1:{name}"
    beats = repo or store.heartbeats
    beat = Heartbeat(beats, holder, now=clocks.now, clock=clocks.clock)
    leases = ChatLeases(store.leases, ttl_s=600, clock=clocks.clock, holder=holder, heartbeat=beat)
    return beat, leases


async def beat_for(clocks: Clocks, seconds: float, *beats: Heartbeat) -> None:
    """These processes beat once a second for `seconds` (the clocks moved along)."""
    for second in range(int(seconds) + 1):
        if second:
            clocks.advance(1)
        for beat in beats:
            assert await beat.beat()


async def test_a_chat_whose_holder_stopped_beating_is_taken_over_and_its_late_writes_refused(
    store: Store,
) -> None:
    clocks = Clocks()
    a_beat, a = process(store, clocks, "a")
    b_beat, b = process(store, clocks, "b")
    await running_turn(store)
    await a_beat.beat()
    async with a.hold(CHAT) as a_fence:
        assert a_fence is not None
        await beat_for(clocks, DEAD_AFTER_S + 1, a_beat, b_beat)
        async with b.hold(CHAT) as held:
            assert held is None  # A beats: its 600 s lease stands
        assert await b_beat.orphans() == []

        # A stops (kill -9, or a pause): no more beats. Past the limit B's take succeeds,
        # long before the lease's 600 s lapse.
        await beat_for(clocks, DEAD_AFTER_S + 1, b_beat)
        assert await b_beat.orphans() == [(CHAT, False)]
        async with b.hold(CHAT) as b_fence:
            assert b_fence is not None and b_fence.generation == a_fence.generation + 1
            assert await b_beat.orphans() == []  # nothing of a stopped holder is left

            # A was only paused: back, its own heartbeat is stale to it too, so it asks the
            # database before any side effect and finds the lease taken over.
            assert not a_beat.fresh()
            with pytest.raises(LeaseLost):
                await a.confirm(a_fence)
            with pytest.raises(LeaseLost):
                await store.turns.finish(
                    TurnEnd("t1", TurnStatus.DONE, [1], reply="late", fence=a_fence)
                )
            assert await turn_status(store, "t1") == "running"  # for B's recovery to settle


async def test_a_holder_that_beats_trusts_its_lease_and_one_that_stalls_asks_again(
    store: Store,
) -> None:
    clocks = Clocks()
    a_beat, a = process(store, clocks, "a")
    await a_beat.beat()
    async with a.hold(CHAT) as fence:
        assert fence is not None
        await store.leases.release(CHAT, a.holder)  # the row changes behind A's back
        await a.confirm(fence)  # fresh, and renewed just now: no database asked
        clocks.advance(DEAD_AFTER_S / 2)
        assert not a_beat.fresh()
        with pytest.raises(LeaseLost):  # not fresh: the database is asked, and says no
            await a.confirm(fence)


async def test_a_process_back_from_an_outage_judges_nobody_until_it_has_beaten_a_while(
    store: Store,
) -> None:
    clocks = Clocks()
    a_beat, a = process(store, clocks, "a")
    b_repo = FlakyBeats(store.db)
    b_beat, b = process(store, clocks, "b", b_repo)
    await a_beat.beat()
    async with a.hold(CHAT) as a_fence:
        assert a_fence is not None
        await beat_for(clocks, DEAD_AFTER_S, a_beat, b_beat)
        # The database is away a while: every beat fails, so every row grows old.
        b_repo.down = True
        for _ in range(int(DEAD_AFTER_S) * 3):
            clocks.advance(1)
            assert not await b_beat.beat()
        b_repo.down = False
        assert await b_beat.beat()  # B's beat gets through first
        async with b.hold(CHAT) as held:
            assert held is None  # A may be beating again any moment: not judged yet
        assert await b_beat.orphans() == []
        await beat_for(clocks, DEAD_AFTER_S + 1, a_beat, b_beat)  # and so it is
        async with b.hold(CHAT) as held:
            assert held is None


async def test_an_outbox_held_by_a_stopped_process_is_handed_over_and_its_chat_kicked(
    store: Store,
) -> None:
    clocks = Clocks()
    a_beat, a = process(store, clocks, "a")
    b_beat, b = process(store, clocks, "b")
    a_senders = a.sibling(store.delivery_leases, "delivery")
    b_senders = b.sibling(store.delivery_leases, "delivery")
    await a_beat.beat()
    async with a_senders.hold(CHAT) as sending, a.hold(CHAT + 1) as turning:
        assert sending is not None and turning is not None
        recovery = Recovery(store.recovery, b, b_senders, heartbeat=b_beat)
        kicked: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
        await beat_for(clocks, DEAD_AFTER_S + 1, b_beat)  # A stopped beating
        watch = asyncio.create_task(
            recovery.watch(
                lambda chat: kicked.put_nowait(("kick", chat)),
                lambda chat: kicked.put_nowait(("deliver", chat)),
            )
        )
        try:
            got = {await asyncio.wait_for(kicked.get(), 10) for _ in range(2)}
        finally:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
        assert got == {("deliver", CHAT), ("kick", CHAT + 1)}
        async with b_senders.hold(CHAT) as taken:
            assert taken is not None and taken.generation == sending.generation + 1


async def test_a_clean_stop_removes_the_heartbeat(store: Store) -> None:
    a_beat, _ = process(store, Clocks(), "a")
    await a_beat.beat()
    await a_beat.stop()
    assert await count(store, ProcessHeartbeat) == 0


@pytest.mark.slow
async def test_a_process_stopped_mid_turn_is_taken_over_in_seconds_and_its_late_answer_refused(
    database_url,
    daemons,
    fake_telegram,
    fake_model,
) -> None:
    needs_postgres(database_url)
    asked, release = asyncio.Event(), asyncio.Event()

    async def brain(request: ModelRequest) -> Script:
        if request.last_user_text == "thanks":
            return Script(text="You're welcome.")
        if not asked.is_set():  # A's request: answered only once A was stopped and resumed
            asked.set()
            await release.wait()
            return Script(text="A's late answer")
        return Script(text="B's answer")

    fake_model.brain = brain
    a, b = daemons(), daemons()
    for daemon in (a, b):
        daemon.env["PALUI_LEASE_TTL_S"] = "600"  # only the heartbeat can hand the chat over
        await daemon.start()
        await fake_telegram.wait_for_request(
            "setWebhook", lambda p, url=daemon.url: p["url"] == url, timeout=90
        )
    update = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "a question")
    assert await fake_telegram.deliver_to_webhook(update, url=a.url) == 200
    await asked.wait()
    a.signal(signal.SIGSTOP)  # as good as dead: its heartbeat stops

    # B sees A's heartbeat stop, takes the chat over, recovers A's turn and answers again:
    # within seconds, far from the lease's 600 s lapse.
    await fake_telegram.wait_for_text(OWNER_CHAT, "B's answer", timeout=60)
    await b.wait_for_log("stopped_holder_chat")
    a.signal(signal.SIGCONT)
    release.set()  # A's answer comes back to A, whose lease is gone: its end is refused
    await a.wait_for_log("chat_given_up")

    thanks = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "thanks")
    assert await fake_telegram.deliver_to_webhook(thanks, url=a.url) == 200
    await fake_telegram.wait_for_text(OWNER_CHAT, "You're welcome.", timeout=60)
    texts = [m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT)]
    assert texts == ["B's answer", "You're welcome."]


async def test_a_message_stored_by_a_process_that_died_before_taking_its_chat_is_swept(
    store: Store,
) -> None:
    await store.inbox.add(1, CHAT, 1, {"update_id": 1, "text": "hi"})
    recovery = Recovery(store.recovery, ChatLeases(store.leases))
    assert await recovery.orphaned() == [CHAT]  # nobody holds it: the sweep kicks it
    assert await store.leases.acquire(CHAT, "another-host:1:cafe", ttl_s=600)
    assert await recovery.orphaned() == []  # held by a live process: its own to answer
