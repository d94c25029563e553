"""Recovering what a dead process left in flight, safely with several processes on one database.

A chat's work (turns, tool calls, ledger actions, paused-turn claims) is only in flight under the
chat's lease (`palui.chat.leases`), and the lease is the process's heartbeat for that chat: the
holder renews it while it works, a `kill -9` stops the renewals. So recovery is per chat and
happens only by a process that holds the chat's lease (`palui.db.recovery`):

- at start, every chat with work in flight whose lease can be taken is settled at once. Leases of
  dead processes on this host are cleared first (their pid is gone), so a restarted single
  process recovers everything immediately; a chat whose lease a live process holds is its own
  business and is left alone (its turn goes on, its claim stays);
- whenever a chat's worker takes the lease, it settles that chat first (a previous holder that
  died, e.g. on another host, after its lease lapsed);
- a sweep every few seconds kicks the chats with work in flight or a message waiting that nobody
  holds, so a chat whose process died is recovered even if no new message arrives;
- each heartbeat (`palui.chat.heartbeat`, every second) kicks the chats and outboxes whose
  leases a process whose heartbeat stopped still holds: a `kill -9` elsewhere is taken over in
  seconds, its leases not waited out.

Delivery leases (who sends a chat's outbox) of dead processes on this host are cleared likewise,
so a restart delivers a reply its predecessor was sending without waiting for the lease to lapse.

A holder that is alive but could not renew for a whole lease (a stalled database link, a long
pause) may be recovered over: the take-over counts the lease's generation up, and that holder's
late writes, made under its old fence, are refused (`palui.db.leases`), so the recovered turn's
end is never overwritten and its reply never sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from palui.chat.heartbeat import Heartbeat
from palui.chat.leases import ChatLeases
from palui.db.recovery import Recovered, RecoveryRepo
from palui.domain import EVERY_CHAT, ChatScope
from palui.logs import get_logger
from palui.observe import Metrics

log = get_logger("palui.chat.recovery")

REASON = "interrupted: the Palui process running it stopped"
SWEEP_EVERY_S = 5.0  # a few reads: how long a message a dead process stored may wait


class Recovery:
    def __init__(
        self,
        repo: RecoveryRepo,
        leases: ChatLeases,
        senders: ChatLeases | None = None,
        *,
        scope: ChatScope = EVERY_CHAT,
        sweep_every_s: float = SWEEP_EVERY_S,
        heartbeat: Heartbeat | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._metrics = metrics or Metrics()
        self._repo = repo
        self._heartbeat = heartbeat
        self._sweep_every_s = sweep_every_s
        self._scope = scope  # chats outside it are left to the process that serves them
        self._leases = leases
        self._senders = senders

    async def _clear_dead(self) -> None:
        await self._leases.clear_dead()
        if self._senders is not None:
            await self._senders.clear_dead()

    async def at_start(self) -> Recovered:
        """Settle every chat whose work a dead process left in flight; skip those held live."""
        if self._heartbeat is not None:
            await self._heartbeat.beat()  # alive before taking anything
        await self._clear_dead()
        total = Recovered()
        for chat_id in filter(self._scope.serves, await self._repo.unfinished_chats()):
            async with self._leases.hold(chat_id) as held:
                if held:
                    total += await self.chat_taken(chat_id)
        return total

    async def chat_taken(self, chat_id: int) -> Recovered:
        """The chat's lease was just taken, and none of its turns runs here: settle leftovers."""
        recovered = await self._repo.recover_chat(chat_id, REASON)
        if recovered:
            self._metrics.lease_taken_over("chat")
            log.warning(
                "chat_recovered",
                chat_id=chat_id,
                turns=recovered.turns,
                calls=recovered.calls,
                actions=recovered.actions,
                claims=recovered.claims,
            )
        return recovered

    async def orphaned(self) -> list[int]:
        """Chats with work in flight, or a message waiting, that no live process holds (a
        process that died right after storing a message never took its chat)."""
        await self._clear_dead()
        found = {*await self._repo.unfinished_chats(), *await self._repo.waiting_chats()}
        return await self._repo.unheld(sorted(filter(self._scope.serves, found)))

    async def watch(self, kick: Callable[[int], None], deliver: Callable[[int], None]) -> None:
        """Forever, with each heartbeat: kick the chats (`kick`) and outboxes (`deliver`) held
        by processes whose heartbeat stopped, so they are taken over now."""
        if self._heartbeat is None:
            return

        def orphan(chat_id: int, is_delivery: bool) -> None:
            if self._scope.serves(chat_id):
                (deliver if is_delivery else kick)(chat_id)

        await self._heartbeat.run(orphan)

    async def close(self) -> None:
        """After this process's leases were released: its heartbeat row goes."""
        if self._heartbeat is not None:
            await self._heartbeat.stop()

    async def sweep(self, kick: Callable[[int], None], every_s: float | None = None) -> None:
        """Forever: kick each orphaned chat; its worker takes the lease and recovers it."""
        while True:
            await asyncio.sleep(self._sweep_every_s if every_s is None else every_s)
            try:
                for chat_id in await self.orphaned():
                    log.info("orphaned_chat", chat_id=chat_id)
                    kick(chat_id)
            except Exception:
                log.exception("recovery_sweep_failed")
