"""Per-chat workers: a chat runs one turn at a time, while this process holds the chat's lease.

A kick starts the chat's worker unless one runs (it then looks again before it stops). The
worker drains what waits, in order: paused turns whose cards were decided, webhook deliveries,
queued job runs, then the inbox's messages, answered together by one turn (in a group, one
person's at a time: palui.chat.groups). Before each round of
turns (and once more after the last) it lets memory compact and auto-save, whether or not more
messages wait: a busy chat's queue may never be empty, and its session must not outgrow
`compact_after` unsummarised. A cap hit or the model's outage (`palui.turns.outage`) leaves
everything stored (messages, webhook deliveries, job runs) and wakes the chat when the cap lifts
or the model answers again; a lease another process holds wakes it a little later (the holder
answers what waits in the shared inbox meanwhile).

The worker keeps the lease while it is busy and for a short idle grace after the queue empties
(a kick meanwhile is answered under the same lease), so a chat in conversation pays one take,
one release and one recovery check per busy spell, not per message; recovery runs only when the
lease is newly taken (a new generation). Each turn carries the lease's fence; a turn that finds
it taken over (`LeaseLost`: this process stalled past its lapse) ends without a word, and the
worker gives the chat up to its new holder.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from palui.approvals.edits import EditFlow
from palui.chat import attempts
from palui.chat.background import log_failure
from palui.chat.groups import one_persons, threaded_to
from palui.chat.leases import RETRY_S as LEASE_RETRY_S
from palui.chat.leases import ChatLeases
from palui.chat.media_step import read_media
from palui.chat.pauses import CapPauses
from palui.chat.recovery import Recovery
from palui.chat.stored_inbound import for_a_turn, inbound_from_json
from palui.db import Store
from palui.delivery.outbox import Outbox, Ready
from palui.domain import EVERY_CHAT, ChatScope, Delivery, Fence, Inbound
from palui.errors import LeaseLost
from palui.jobs.admission import admit_run
from palui.logs import get_logger
from palui.media import MediaIntake
from palui.memory import Memory
from palui.observe import Metrics, Tracing
from palui.tools.switchboard import Switchboard
from palui.turns.foreign import said
from palui.turns.outage import TOLD as MODEL_DOWN
from palui.turns.runner import TurnRunner

EDITED_NOTE = "I saw your edit, but I don't re-run edited messages. Send it as a new message."
# A message with neither text nor a file Palui reads (a sticker, a location...).
UNREADABLE_NOTE = "I can read text, voice messages, photos and documents, but not this kind."
IDLE_GRACE_S = 3.0  # the lease is kept this long after the queue empties, for the next message

log = get_logger("palui.chat.workers")


@dataclass(slots=True)
class _Worker:
    task: asyncio.Task[None] | None = None
    rekick: bool = False  # a kick came while the worker was looking: look again
    wake: asyncio.TimerHandle | None = None  # a cap lifts, or the lease may be free again
    kicked: asyncio.Event = field(default_factory=asyncio.Event)  # ends an idle grace
    # Set while nothing waits for this worker: it ended, or idles in its grace.
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    answering: bool = False  # a batch of messages was taken and its turn has not ended


class ChatWorkers:
    def __init__(
        self,
        store: Store,
        turns: TurnRunner,
        outbox: Outbox,
        pauses: CapPauses,
        leases: ChatLeases,
        recovery: Recovery,
        *,
        edits: EditFlow,
        memory: Memory,
        now: Callable[[], datetime],
        scope: ChatScope = EVERY_CHAT,
        idle_grace_s: float = IDLE_GRACE_S,
        media: MediaIntake | None = None,
        board: Switchboard | None = None,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self._metrics = metrics or Metrics()
        self._tracing = tracing or Tracing()
        self._store = store
        self._media = media  # None: files get UNREADABLE_NOTE (palui.chat.media_step)
        self._board = board  # told the settings version each look reads along
        self._scope = scope  # a chat outside it is never run here, whatever wakes it
        self._turns = turns
        self._outbox = outbox
        self._pauses = pauses
        self._leases = leases
        self._recovery = recovery
        self._edits = edits
        self._memory = memory
        self._now = now
        self._idle_grace_s = idle_grace_s
        self._workers: dict[int, _Worker] = {}
        self._closed = False

    def _worker(self, chat_id: int) -> _Worker:
        worker = self._workers.get(chat_id)
        if worker is None:
            worker = self._workers[chat_id] = _Worker()
            worker.idle.set()
        return worker

    def task(self, chat_id: int) -> asyncio.Task[None] | None:
        worker = self._workers.get(chat_id)
        return worker.task if worker is not None else None

    def __len__(self) -> int:
        """Chats with a worker entry: only those running or waiting to be woken."""
        return len(self._workers)

    def idle(self, chat_id: int) -> asyncio.Event:
        """Set while the chat's worker has nothing to do (ended, or idling in its grace). A chat
        without a worker entry gets none made (the map holds busy chats only)."""
        worker = self._workers.get(chat_id)
        if worker is not None:
            return worker.idle
        ended = asyncio.Event()
        ended.set()
        return ended

    def busy(self, chat_id: int) -> bool:
        """Whether a turn runs for the chat in this process now: a message arriving waits for
        the next one (and gets the 👀 reaction, `palui.chat.inbox`)."""
        running = self._turns.running.get(chat_id)
        worker = self._workers.get(chat_id)  # not created: the map holds busy chats only
        answering = worker is not None and worker.answering
        return answering or (running is not None and not running.task.done())

    def kick(self, chat_id: int) -> None:
        if not self._scope.serves(chat_id):
            return
        worker = self._worker(chat_id)
        worker.rekick = True
        if worker.task is not None and not worker.task.done():
            worker.idle.clear()
            worker.kicked.set()  # a worker in its grace looks again now
            return
        if self._closed:
            return
        worker.idle.clear()
        worker.task = asyncio.create_task(self._drain(chat_id), name=f"chat-{chat_id}")
        worker.task.add_done_callback(log_failure)
        worker.task.add_done_callback(lambda _: worker.idle.set())
        worker.task.add_done_callback(functools.partial(self._forget_idle, chat_id))

    def _forget_idle(self, chat_id: int, task: asyncio.Task[None]) -> None:
        """A chat whose worker ended with nothing to wake it for keeps no entry: the map holds
        busy chats, not every chat ever seen."""
        worker = self._workers.get(chat_id)
        if worker is not None and worker.task is task and worker.wake is None:
            del self._workers[chat_id]

    def close(self) -> list[asyncio.Task[None]]:
        """Stop kicking; the running workers (and the model's probe), for the caller to cancel."""
        self._closed = True
        for worker in self._workers.values():
            if worker.wake is not None:
                worker.wake.cancel()
        probe = self._turns.outage.probe()
        tasks = [w.task for w in self._workers.values() if w.task is not None]
        return tasks if probe is None else [*tasks, probe]

    def _wake_in(self, chat_id: int, delay_s: float) -> None:
        worker = self._worker(chat_id)
        if worker.wake is not None:
            worker.wake.cancel()
        worker.wake = asyncio.get_running_loop().call_later(delay_s, self._woken, chat_id)

    def _woken(self, chat_id: int) -> None:
        worker = self._workers.get(chat_id)
        if worker is not None:
            worker.wake = None
        self.kick(chat_id)

    async def _drain(self, chat_id: int) -> None:
        """Run the chat's turns while this process holds its lease; else look again soon."""
        worker = self._worker(chat_id)
        while True:
            try:
                async with self._leases.hold(chat_id, self._turns.lease_lost) as fence:
                    if fence is not None:
                        # A new take (a new generation): a previous holder may have died.
                        await self._recovery.chat_taken(chat_id)
                        await self._drain_while_busy(chat_id, fence)
            except LeaseLost:
                log.warning("chat_given_up", chat_id=chat_id)  # its new holder goes on
                break
            except Exception as exc:
                # E.g. the database went away mid-turn: look again soon, not when something
                # else wakes the chat; the next take recovers what was in flight.
                log.warning("chat_worker_failed", chat_id=chat_id, error=repr(exc))
                break
            if fence is None:
                break
            if not worker.rekick:
                return  # else a kick came while the lease was being released: look again
        self._wake_in(chat_id, LEASE_RETRY_S)

    async def _drain_while_busy(self, chat_id: int, fence: Fence) -> None:
        """Drain, then keep the lease for the idle grace: a kick within it drains again under
        the same lease. A last look at its end answers what reached another process
        meanwhile (that process found the lease taken and left the message to us)."""
        worker = self._worker(chat_id)
        while True:
            await self._drain_held(chat_id, fence)
            if worker.rekick:
                continue
            worker.kicked.clear()
            worker.idle.set()
            try:
                async with asyncio.timeout(self._idle_grace_s):
                    await worker.kicked.wait()
            except TimeoutError:
                await self._drain_held(chat_id, fence)
                if not worker.rekick:
                    return

    async def _drain_held(self, chat_id: int, fence: Fence) -> None:
        """Run turns for the chat until its inbox holds no waiting message."""
        worker = self._worker(chat_id)
        while True:
            worker.rekick = False
            # Still ours? (free while renewed lately; else one renewal): a process that stalled
            # past the lapse starts nothing more in a chat another process took over.
            await self._leases.confirm(fence)
            # Every queue in one query (palui.db.queues); a kind's details only when it has any.
            waiting = await self._store.queues.waiting(chat_id)
            self._metrics.inbox_waits(chat_id, len(waiting.inbox))
            if self._board is not None:
                await self._board.observe(waiting.settings_version)  # the switches, fresh
            # A session past `compact_after` is compacted (and saved) before the next turn
            # starts; with nothing past it this is one read. Slices are fixed in the database
            # first, so a crash here leaves them for the next look (memory.keeper).
            await self._memory.maintain(chat_id, waiting.memory)
            if waiting.paused:
                for turn_id in await self._store.approvals.resumable(chat_id):
                    with self._tracing.turn("resumed", chat_id):
                        await self._turns.resume(chat_id, turn_id, fence)
                        await self._outbox.deliver(chat_id, fence)
            if waiting.webhooks:
                for delivery in await self._store.webhooks.pending(chat_id):
                    if attempts.spent(delivery):  # its summary failed twice: a note, no loop
                        await attempts.give_up_delivery(self._store, delivery)
                        await self._outbox.deliver(chat_id, fence)
                        continue
                    if await self._held_back(chat_id):
                        return  # the delivery stays stored; the chat is woken when it lifts
                    with self._tracing.turn("webhook", chat_id):
                        await self._summarise(delivery, fence)
                        await self._outbox.deliver(chat_id, fence)
                    if await self._model_down(chat_id):
                        return  # it waits for the model, unhandled (`palui.turns.outage`)
            if waiting.jobs:
                for run in await self._store.jobs.queued(chat_id):
                    if await self._held_back(chat_id):
                        return  # the run stays queued; the chat is woken when it lifts
                    job = await admit_run(self._store, run, self._now())
                    with self._tracing.turn("scheduled", chat_id):
                        if job is not None:
                            await self._turns.run_job_turn(run, job, fence)
                        await self._outbox.deliver(chat_id, fence)
                    if await self._model_down(chat_id):
                        return  # the run waits for the model, queued again
            inbox = waiting.inbox
            if waiting.paused or waiting.webhooks or waiting.jobs:
                inbox = tuple(await self._store.inbox.pending(chat_id))  # turns ran meanwhile
            inbox, tried = attempts.split(inbox)
            if tried:  # their handling died twice: an apology, never a crash loop
                await attempts.give_up(self._store, chat_id, tried)
                await self._outbox.deliver(chat_id, fence)
            batch = [
                inbound
                for inbound in (inbound_from_json(item.payload) for item in inbox)
                if for_a_turn(inbound)
            ]
            if waiting.edits:
                batch = await self._edits.take_answers(batch)  # answers to a card's ✏️ Edit
            if not batch:
                if worker.rekick:
                    continue
                return
            # One person's messages per turn (its requester); another's wait for the next look.
            waits = len(batch)
            batch = one_persons(batch)
            others_wait = len(batch) < waits
            runs = any(said(i) or (i.attachment and not i.edited) for i in batch)
            if runs and await self._held_back(chat_id):
                return  # the messages stay in the inbox; the chat is woken when it lifts
            # A message an earlier turn took (and was interrupted on) may have left a preview.
            claimed = {item.update_id for item in inbox if item.turn_id is not None}
            rerun = any(inbound.update_id in claimed for inbound in batch)
            with self._tracing.turn("chat", chat_id):  # the turn and its reply's delivery
                await self._answer(chat_id, batch, fence, rerun=rerun)
            if await self._model_down(chat_id):
                return  # its messages were kept (`palui.turns.outage`)
            if not worker.rekick and not others_wait:
                # Nothing came here meanwhile (a message here kicks): no second look now. What
                # reached another process is seen by the look the idle grace ends with.
                return

    async def _summarise(self, delivery: Delivery, fence: Fence) -> None:
        try:
            await self._turns.run_webhook_turn(delivery, fence)
        except asyncio.CancelledError:
            if self._closed:  # an orderly stop: no failed attempt (palui.chat.attempts)
                await asyncio.shield(self._store.webhooks.uncount(delivery.id))
            raise

    async def _held_back(self, chat_id: int) -> bool:
        """A cap pause or the model's outage: no turn starts (it would fail the same way)."""
        return await self._paused(chat_id) or await self._model_down(chat_id)

    async def _paused(self, chat_id: int) -> bool:
        lifts_at = await self._pauses.paused_until(chat_id)
        if lifts_at is None:
            return False
        self._wake_in(chat_id, max((lifts_at - self._now()).total_seconds(), 0) + 1)
        return True

    async def _model_down(self, chat_id: int) -> bool:
        """The model stopped answering: the chat waits (told once), woken when the model's
        probe gets an answer."""
        outage = self._turns.outage
        if not outage.down:
            return False
        outage.wake_when_back(chat_id, self.kick)
        if outage.first_word(chat_id):
            await self._outbox.add(chat_id, MODEL_DOWN)
        return True

    async def _answer(
        self, chat_id: int, batch: Sequence[Inbound], fence: Fence, *, rerun: bool = True
    ) -> None:
        worker = self._worker(chat_id)
        worker.answering = True  # from the files' download on: a message now waits (👀)
        ready: Ready | None = None
        readable: list[Inbound] = []
        try:
            # Files first: each becomes the text its turn reads, or a reply and no turn.
            media = await read_media(self._store, self._media, chat_id, batch)
            readable = [i for i in media.inbounds if said(i)]
            others = [i for i in media.inbounds if not said(i)]
            for inbound in others:
                note = EDITED_NOTE if inbound.edited else UNREADABLE_NOTE
                await self._store.outbox.add(chat_id, note, reply_to=threaded_to(inbound))
                await self._store.inbox.mark_done([inbound.update_id])
            for line in media.heard:  # what a voice note said, shown before the answer (once)
                await self._store.outbox.add(
                    chat_id, line.text, reply_to=line.reply_to, about_update=line.about
                )
            if readable:
                if media.heard:
                    await self._outbox.deliver(chat_id, fence)
                mark = self._outbox.mark(chat_id)
                stored = await self._turns.run_chat_turn(
                    chat_id, readable, fence, media.images, rerun=rerun
                )
                if stored is not None and stored.alone:
                    ready = (mark, stored.item)  # sent without reading the outbox, if still so
        except asyncio.CancelledError:
            if self._closed:  # an orderly stop: no failed attempt (palui.chat.attempts)
                await asyncio.shield(attempts.uncount(self._store, batch))
            raise
        finally:
            worker.answering = False
        await self._outbox.deliver(chat_id, fence, ready)
        stamped = [i.received_at for i in readable if i.received_at is not None]
        if stamped and self._outbox.delivered(chat_id):
            self._metrics.answered((self._now() - min(stamped)).total_seconds())
