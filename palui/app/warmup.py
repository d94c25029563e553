"""Start-up warm-up: what the first turn would pay for the first time, paid as the app starts,
so the first answer costs what later ones do.

Each warm-up is a background task started beside the start-up (migrations, MCP servers), never
in its way: the model's rehearsal (`palui.llm.warm`), the MCP client's result checks
(`palui.connectors.warm`), one auto-recall question (`Memory.warm_up`), the offer a chat turn
builds, and the reads a worker's pass makes (their SQL compiled and cached). Telegram is polled
before they are done (`palui.app.start`); a turn waits for the model's (the model layer's own
readiness, `ModelClient`), and `WarmUp.ready` waits for all of them, at most `WARM_WAIT_S` in
all, before the app says it serves (`palui_ready`, /healthz's `ready_in_s`). Each is harmless:
it writes nothing anyone can see (no turn, message, check or lease), and a failure or a timeout
is logged, never raised: a warm-up that fails only leaves the first answer slower.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable

from palui.db import Store
from palui.domain import TurnKind
from palui.logs import get_logger
from palui.memory import Memory
from palui.turns.runner import TurnRunner

log = get_logger("palui.app")

WARM_WAIT_S = 60.0  # past this, the app says it serves anyway and the first answer pays the rest
NO_CHAT = 0  # the chat the reads look at; reading it changes nothing whoever has it

Warm = Callable[[], Awaitable[object]]


class WarmUp:
    def __init__(self, wait_s: float = WARM_WAIT_S) -> None:
        self._wait_s = wait_s
        self._deadline: float | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, part: str, warm: Warm) -> None:
        if self._deadline is None:
            self._deadline = time.monotonic() + self._wait_s
        task = asyncio.create_task(self._quietly(part, warm), name=f"warm-up {part}")
        self._tasks.append(task)

    async def _quietly(self, part: str, warm: Warm) -> None:
        started = time.monotonic()
        try:
            async with asyncio.timeout(self._wait_s):
                await warm()
        except Exception as exc:  # a failed warm-up leaves a slower first answer, nothing worse
            log.warning("warm_up_failed", part=part, error=repr(exc))
            return
        log.debug("warm_up_done", part=part, took_ms=round((time.monotonic() - started) * 1000))

    async def ready(self) -> None:
        """Return once every warm-up started so far is done, or `WARM_WAIT_S` after the first
        started."""
        pending = [task for task in self._tasks if not task.done()]
        if pending and self._deadline is not None:
            await asyncio.wait(pending, timeout=max(0.0, self._deadline - time.monotonic()))

    def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()


def first_turn(store: Store, memory: Memory, turns: TurnRunner) -> tuple[tuple[str, Warm], ...]:
    """The warm-ups of the parts a chat's first turn goes through, started once the connectors
    are up and the switches read."""
    return (
        ("recall", memory.warm_up),
        ("offer", functools.partial(turns.offer, (), TurnKind.CHAT, False)),
        ("worker-reads", functools.partial(worker_reads, store)),
    )


async def worker_reads(store: Store) -> None:
    """The reads of a chat worker's pass and of an answer's delivery, on a chat with nothing
    waiting: the first message's pass then finds their SQL compiled."""
    await store.queues.waiting(NO_CHAT)
    await store.outbox.pending(NO_CHAT)
