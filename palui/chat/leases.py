"""One process at a time runs a chat's turns, also with several processes on one database.

The chat's worker holds the chat's lease row (`palui.db.leases`) while it runs turns and renews it
in the background; a worker that finds the lease held elsewhere steps back and looks again a
little later (the holder answers whatever is waiting in the meantime, since the inbox is shared).
A process that dies stops renewing, so its leases lapse and another process takes over.

Fencing: `hold` yields the `Fence` of its take (a new generation each time), and the work done
under it carries that fence into its writes, which the database refuses once another process has
taken the lease over (`LeaseLost`). A renewal that finds the lease taken over calls `on_lost`, so
the chat's running turn is cancelled before its next side effect. Between renewals the holder
trusts its lease only for half a lapse after its last confirmed renewal (a monotonic clock, so a
process stopped with SIGSTOP or a long pause sees the gap): `confirm`, called before a side
effect, asks the database again only when that is past — or when this process's heartbeat is
no longer fresh (`palui.chat.heartbeat`): another process may then take its leases over without
waiting for their lapse. The same class, over its own table, is the outbox's delivery lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from palui.chat.heartbeat import Heartbeat
from palui.db.leases import NOBODY_DEAD, LeaseRepo
from palui.domain import Fence
from palui.errors import LeaseLost
from palui.logs import get_logger

log = get_logger("palui.lease")

LEASE_TTL_S = 60.0  # longer than a renewal gap; a dead holder's chats wait this long at most
RENEW_EVERY_S = 15.0
RETRY_S = 2.0  # how soon a worker that stepped back looks again

OnLost = Callable[[int], object]


@dataclass(slots=True)
class _Held:
    fence: Fence
    confirmed_at: float  # monotonic: when the last take or renewal that succeeded was sent
    on_lost: OnLost | None
    lost: bool = False


class ChatLeases:
    def __init__(
        self,
        repo: LeaseRepo,
        *,
        ttl_s: float = LEASE_TTL_S,
        what: str = "chat",
        clock: Callable[[], float] = time.monotonic,
        holder: str | None = None,
        heartbeat: Heartbeat | None = None,
    ) -> None:
        self._repo = repo
        self._heartbeat = heartbeat
        self._ttl_s = ttl_s
        self._what = what  # "chat" or "delivery", for the logs and errors
        self._clock = clock
        self._held: dict[int, _Held] = {}  # the leases this process holds now, by chat
        # This process, as the lease rows name it (its chat and delivery leases share it).
        self.holder = holder or process_holder()

    def sibling(self, repo: LeaseRepo, what: str) -> ChatLeases:
        """This process's other lease of each chat (the delivery lease), under the same holder
        name: a chat lease held here does not keep this process's own deliveries out."""
        return ChatLeases(
            repo,
            ttl_s=self._ttl_s,
            what=what,
            clock=self._clock,
            holder=self.holder,
            heartbeat=self._heartbeat,
        )

    @property
    def ttl_s(self) -> float:
        return self._ttl_s

    async def clear_dead(self) -> int:
        """Release leases of processes on this host that no longer run (a `kill -9`), so a
        restart need not wait for them to lapse. Other hosts' leases lapse by themselves."""
        host = self.holder.split(":", 1)[0]
        cleared = 0
        for chat_id, holder in await self._repo.holders():
            holder_host, _, rest = holder.partition(":")
            pid = rest.partition(":")[0]
            if holder_host == host and pid.isdigit() and not _alive(int(pid)):
                await self._repo.release(chat_id, holder)
                cleared += 1
        return cleared

    @contextlib.asynccontextmanager
    async def hold(
        self, chat_id: int, on_lost: OnLost | None = None
    ) -> AsyncIterator[Fence | None]:
        """Yields the fence of this process's take of the chat's lease, None when another
        holds it (or this process already does, elsewhere). `on_lost(chat_id)` is called if a
        renewal finds it taken over meanwhile."""
        if chat_id in self._held:
            yield None  # a second take here would fence out the first one's work
            return
        started = self._clock()
        try:
            dead_before = NOBODY_DEAD if self._heartbeat is None else self._heartbeat.dead_before()
            fence = await self._repo.take(chat_id, self.holder, self._ttl_s, dead_before)
        except asyncio.CancelledError:
            # Cancelled (e.g. shutdown) after the upsert may have committed: without this the
            # lease would stay ours until it lapses, and a restart here would wait for it.
            with contextlib.suppress(Exception):
                await asyncio.shield(self._repo.release(chat_id, self.holder))
            raise
        if fence is None:
            log.info(f"{self._what}_lease_busy", chat_id=chat_id)
            yield None
            return
        held = self._held[chat_id] = _Held(fence, started, on_lost)
        renewer = asyncio.create_task(self._renew(held), name=f"lease-{chat_id}")
        try:
            yield fence
        finally:
            if self._held.get(chat_id) is held:
                del self._held[chat_id]
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            try:
                await self._repo.release(chat_id, self.holder, fence.generation)
            except Exception as exc:  # it lapses by itself
                log.warning(f"{self._what}_lease_not_released", chat_id=chat_id, error=str(exc))

    def current(self, fence: Fence) -> bool:
        """Whether this process still holds `fence` as far as it knows (no database)."""
        held = self._held.get(fence.chat_id)
        return held is not None and held.fence == fence and not held.lost

    async def confirm(self, fence: Fence) -> None:
        """Before a side effect: raise `LeaseLost` unless `fence` is still the lease's. Free
        while the last renewal is recent; else one renewal decides."""
        held = self._held.get(fence.chat_id)
        if held is None or held.fence != fence or held.lost:
            raise LeaseLost(fence.chat_id, self._what)
        beating = self._heartbeat is None or self._heartbeat.fresh()
        if beating and self._clock() - held.confirmed_at < self._ttl_s / 2:
            return
        await self._renew_once(held)

    async def _renew_once(self, held: _Held) -> None:
        sent = self._clock()
        if await self._repo.renew(held.fence, self._ttl_s):
            held.confirmed_at = max(held.confirmed_at, sent)
            return
        if not held.lost:
            held.lost = True
            log.error(
                f"{self._what}_lease_lost",
                chat_id=held.fence.chat_id,
                generation=held.fence.generation,
            )
            if held.on_lost is not None:
                held.on_lost(held.fence.chat_id)
        raise LeaseLost(held.fence.chat_id, self._what)

    async def _renew(self, held: _Held) -> None:
        while True:
            await asyncio.sleep(min(RENEW_EVERY_S, self._ttl_s / 3))
            try:
                await self._renew_once(held)
            except LeaseLost:
                return
            except Exception as exc:
                log.warning(
                    f"{self._what}_lease_not_renewed", chat_id=held.fence.chat_id, error=str(exc)
                )


def process_holder() -> str:
    """This process, as its lease rows and its heartbeat name it: host, pid, and a nonce."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, alive
    return True
