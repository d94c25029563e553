"""This process's heartbeat: its chats are taken over within seconds of its death, not at the
lapse of a 60 s lease (DESIGN §3, several processes).

Every `BEAT_EVERY_S` the process writes its row (`palui.db.heartbeats`), named as its leases name
it. A holder whose last beat is older than `DEAD_AFTER_S` — three beats missed — counts as
stopped: another process's take of its chat or delivery lease succeeds at once (the lease's
generation goes up, so the stopped holder's late writes are refused, `palui.db.leases`), and each
beat here also looks for leases such holders still hold and kicks those chats, so they are
recovered and answered without waiting for a message.

Three missed beats rather than one: a beat is a one-row write, and a write can wait on a busy
database for a second; the cost of judging wrongly is a turn cancelled and run again elsewhere
(safe, but wasted), the cost of judging late is seconds of silence.

Two guards against judging a live process dead:
- this process judges others only once its own beats have gone through for `DEAD_AFTER_S`
  without a failure: after a database outage every process's beat is old, and the first one
  back must not take everybody's chats before the others had a chance to beat again;
- this process trusts its own leases without asking the database only while its last beat that
  went through was sent less than half `DEAD_AFTER_S` ago (`fresh`, a monotonic clock, so a
  pause — SIGSTOP, a stalled loop — is seen): from then on others may soon judge it stopped, so
  `ChatLeases.confirm` renews before every side effect, and a renewal that finds the lease taken
  over stops the work.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from palui.db.heartbeats import HeartbeatRepo
from palui.db.leases import NOBODY_DEAD
from palui.db.models import utcnow
from palui.logs import get_logger

log = get_logger("palui.heartbeat")

BEAT_EVERY_S = 1.0
DEAD_AFTER_S = 3.0
PRUNE_AFTER = timedelta(days=1)  # rows of processes long gone

OnOrphan = Callable[[int, bool], None]  # (chat_id, is_delivery)


class Heartbeat:
    def __init__(
        self,
        repo: HeartbeatRepo,
        holder: str,
        *,
        every_s: float = BEAT_EVERY_S,
        dead_after_s: float = DEAD_AFTER_S,
        now: Callable[[], datetime] = utcnow,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._repo = repo
        self.holder = holder
        self._every_s = every_s
        self._dead_after_s = dead_after_s
        self._now = now
        self._clock = clock
        self._last_ok: float | None = None  # monotonic: when the last good beat was sent
        self._healthy_since: float | None = None  # since when every beat went through

    def fresh(self) -> bool:
        """Whether no other process can judge this one stopped yet (see the module's doc)."""
        return self._last_ok is not None and self._clock() - self._last_ok < self._dead_after_s / 2

    def dead_before(self) -> datetime:
        """For a lease's take: holders whose beat is older than this are stopped. Nobody is
        while this process's own beats have not gone through for a whole `DEAD_AFTER_S`."""
        since = self._healthy_since
        if since is None or self._clock() - since < self._dead_after_s:
            return NOBODY_DEAD
        return self._now() - timedelta(seconds=self._dead_after_s)

    async def beat(self) -> bool:
        """One beat; False (logged) when it did not go through."""
        sent = self._clock()
        try:
            await self._repo.beat(self.holder, self._now())
        except Exception as exc:
            if self._healthy_since is not None:
                log.warning("heartbeat_failed", error=str(exc))
            self._healthy_since = None
            return False
        self._last_ok = sent
        if self._healthy_since is None:
            self._healthy_since = sent
        return True

    async def orphans(self) -> list[tuple[int, bool]]:
        """(chat_id, is_delivery) of leases held by stopped holders: none while this process
        may not judge (see `dead_before`)."""
        dead_before = self.dead_before()
        if dead_before == NOBODY_DEAD:
            return []
        return await self._repo.orphans(dead_before)

    async def run(self, on_orphan: OnOrphan) -> None:
        """Forever: beat, and hand each lease a stopped holder still holds to `on_orphan`."""
        await self._prune()
        while True:
            if await self.beat():
                try:
                    for chat_id, is_delivery in await self.orphans():
                        log.info("stopped_holder_chat", chat_id=chat_id, delivery=is_delivery)
                        on_orphan(chat_id, is_delivery)
                except Exception as exc:
                    log.warning("heartbeat_orphans_failed", error=str(exc))
            await asyncio.sleep(self._every_s)

    async def stop(self) -> None:
        """A clean stop, after the leases were released: the row goes, nobody need judge it."""
        try:
            await self._repo.forget(self.holder)
        except Exception as exc:  # it will be judged stopped, and it holds nothing
            log.warning("heartbeat_not_removed", error=str(exc))

    async def _prune(self) -> None:
        try:
            await self._repo.prune(self._now() - PRUNE_AFTER)
        except Exception as exc:
            log.warning("heartbeat_prune_failed", error=str(exc))
