"""One process at a time runs a chat's turns, also with several processes on one database.

The chat's worker holds the chat's lease row (`palui.db.leases`) while it runs turns and renews it
in the background; a worker that finds the lease held elsewhere steps back and looks again a
little later (the holder answers whatever is waiting in the meantime, since the inbox is shared).
A process that dies stops renewing, so its leases lapse and another process takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import AsyncIterator

from palui.db.leases import LeaseRepo
from palui.logs import get_logger

log = get_logger("palui.lease")

LEASE_TTL_S = 60.0  # longer than a renewal gap; a dead holder's chats wait this long at most
RENEW_EVERY_S = 15.0
RETRY_S = 2.0  # how soon a worker that stepped back looks again


class ChatLeases:
    def __init__(self, repo: LeaseRepo, *, ttl_s: float = LEASE_TTL_S) -> None:
        self._repo = repo
        self._ttl_s = ttl_s
        self.holder = f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

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
    async def hold(self, chat_id: int) -> AsyncIterator[bool]:
        """Yields True while this process holds the chat's lease, False when another does."""
        try:
            taken = await self._repo.acquire(chat_id, self.holder, self._ttl_s)
        except asyncio.CancelledError:
            # Cancelled (e.g. shutdown) after the upsert may have committed: without this the
            # lease would stay ours until it lapses, and a restart here would wait for it.
            with contextlib.suppress(Exception):
                await asyncio.shield(self._repo.release(chat_id, self.holder))
            raise
        if not taken:
            log.info("chat_lease_busy", chat_id=chat_id)
            yield False
            return
        renewer = asyncio.create_task(self._renew(chat_id), name=f"lease-{chat_id}")
        try:
            yield True
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            try:
                await self._repo.release(chat_id, self.holder)
            except Exception as exc:  # it lapses by itself
                log.warning("chat_lease_not_released", chat_id=chat_id, error=str(exc))

    async def _renew(self, chat_id: int) -> None:
        while True:
            await asyncio.sleep(min(RENEW_EVERY_S, self._ttl_s / 3))
            try:
                if not await self._repo.acquire(chat_id, self.holder, self._ttl_s):
                    log.error("chat_lease_lost", chat_id=chat_id)
            except Exception as exc:
                log.warning("chat_lease_not_renewed", chat_id=chat_id, error=str(exc))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, alive
    return True
