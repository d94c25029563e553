"""Outgoing messages are paced to Telegram's limits, on a fake clock (no real waiting)."""

from __future__ import annotations

import asyncio
import random
from itertools import pairwise

import pytest

from palui.channels.ratelimit import SendLimits, SendRateLimiter

PRIVATE, OTHER_PRIVATE, GROUP = 1001, 1002, -100123


class FakeClock:
    """Sleeping moves time forward at once; time never goes back."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)  # let other senders run, as a real sleep would


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def limiter(clock: FakeClock) -> SendRateLimiter:
    return SendRateLimiter(clock=clock, sleep=clock.sleep)


async def send_times(limiter: SendRateLimiter, clock: FakeClock, chats: list[int]) -> list[float]:
    times = []
    for chat_id in chats:
        await limiter.acquire(chat_id)
        times.append(clock.now)
    return times


async def test_first_message_to_a_chat_goes_out_at_once(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    await limiter.acquire(PRIVATE)

    assert clock.sleeps == []


async def test_messages_to_one_chat_are_a_second_apart(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    assert await send_times(limiter, clock, [PRIVATE] * 3) == [0.0, 1.0, 2.0]


async def test_different_chats_do_not_wait_for_each_other(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    times = await send_times(limiter, clock, [PRIVATE, OTHER_PRIVATE, GROUP])

    assert times == [0.0, 0.0, 0.0]


async def test_a_group_gets_at_most_20_messages_a_minute(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    times = await send_times(limiter, clock, [GROUP] * 22)

    assert times[:20] == [float(n) for n in range(20)]
    assert times[20:] == [60.0, 61.0]


async def test_private_chats_have_no_per_minute_cap(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    times = await send_times(limiter, clock, [PRIVATE] * 25)

    assert times[-1] == 24.0


async def test_all_chats_together_get_at_most_30_messages_a_second(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    times = await send_times(limiter, clock, list(range(1, 46)))

    assert times[:30] == [0.0] * 30
    assert times[30:] == [1.0] * 15


async def test_paused_chat_waits_out_retry_after_and_others_do_not(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    limiter.pause_chat(PRIVATE, 5)

    assert await send_times(limiter, clock, [OTHER_PRIVATE, PRIVATE]) == [0.0, 5.0]


async def test_pause_all_holds_every_chat(limiter: SendRateLimiter, clock: FakeClock) -> None:
    await limiter.acquire(PRIVATE)
    limiter.pause_all(3)

    assert await send_times(limiter, clock, [OTHER_PRIVATE, GROUP]) == [3.0, 3.0]


async def test_a_shorter_pause_does_not_cut_a_longer_one(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    limiter.pause_chat(PRIVATE, 10)
    limiter.pause_chat(PRIVATE, 2)

    assert await send_times(limiter, clock, [PRIVATE]) == [10.0]


async def test_pause_set_while_waiting_is_honoured(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    await limiter.acquire(PRIVATE)
    waiting = asyncio.create_task(limiter.acquire(PRIVATE))
    limiter.pause_chat(PRIVATE, 7)

    await waiting

    assert clock.now == 7.0


async def test_slot_keeps_one_chats_messages_in_order(limiter: SendRateLimiter) -> None:
    order: list[str] = []
    first_inside = asyncio.Event()
    release_first = asyncio.Event()

    async def first() -> None:
        async with limiter.slot(PRIVATE):
            order.append("first starts")
            first_inside.set()
            await release_first.wait()
            order.append("first ends")

    async def second() -> None:
        async with limiter.slot(PRIVATE):
            order.append("second")

    task = asyncio.create_task(first())
    await first_inside.wait()
    later = asyncio.create_task(second())
    release_first.set()
    await asyncio.gather(task, later)

    assert order == ["first starts", "first ends", "second"]


async def test_cancelled_wait_counts_no_send(clock: FakeClock) -> None:
    sleeping, never = asyncio.Event(), asyncio.Event()

    async def stuck_sleep(_seconds: float) -> None:
        sleeping.set()
        await never.wait()

    stuck = SendRateLimiter(clock=clock, sleep=stuck_sleep)
    await stuck.acquire(PRIVATE)
    waiting = asyncio.create_task(stuck.acquire(PRIVATE))
    await sleeping.wait()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    clock.now = 1.0
    await stuck.acquire(PRIVATE)  # exactly one send in the last second: no wait needed


async def test_concurrent_senders_never_exceed_any_limit(clock: FakeClock) -> None:
    limits = SendLimits(per_chat_interval=1.0, group_per_minute=5, global_per_second=4)
    limiter = SendRateLimiter(limits, clock=clock, sleep=clock.sleep)
    rng = random.Random(3)
    chats = [rng.choice([1, 2, 3, -10, -20]) for _ in range(80)]
    sent: list[tuple[int, float]] = []

    async def send(chat_id: int) -> None:
        async with limiter.slot(chat_id):
            sent.append((chat_id, clock.now))

    await asyncio.gather(*(send(chat_id) for chat_id in chats))

    assert len(sent) == len(chats)
    for chat_id in set(chats):
        times = [t for c, t in sent if c == chat_id]
        assert all(b - a >= 1.0 for a, b in pairwise(times))
        if chat_id < 0:
            assert all(b - a >= 60.0 for a, b in zip(times, times[5:], strict=False))
    everything = sorted(t for _, t in sent)
    assert all(b - a >= 1.0 for a, b in zip(everything, everything[4:], strict=False))


async def test_a_chat_waits_a_full_interval_from_telegrams_answer(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    """A request held on its way (a busy loop) arrives late: the next message to the chat is
    paced from the answer, so the two never arrive closer than a second."""
    await limiter.acquire(PRIVATE)
    clock.now = 0.4  # the first message reached Telegram and was answered only now
    limiter.answered(PRIVATE)

    await limiter.acquire(PRIVATE)

    assert clock.now == 1.4


async def test_a_refused_request_holds_no_later_message(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    # A search's probe Telegram refuses ("message to edit not found") shows nothing: the
    # chat's next message need not wait a second behind it.
    counted = await limiter.acquire(PRIVATE)
    limiter.refused(PRIVATE, counted)
    await limiter.acquire(PRIVATE)
    assert clock.now == 0.0


async def test_a_refusal_does_not_undo_a_message_counted_after_it(
    limiter: SendRateLimiter, clock: FakeClock
) -> None:
    refused = await limiter.acquire(PRIVATE)
    sent = await limiter.acquire(PRIVATE)
    limiter.refused(PRIVATE, refused)
    await limiter.acquire(PRIVATE)
    assert clock.now == sent + limiter.limits.per_chat_interval
