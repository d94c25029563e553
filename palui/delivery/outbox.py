"""Outbox delivery: the ONE sender of a chat's replies.

A reply is in the outbox before anything is sent (committed with its turn); `deliver` sends the
chat's undelivered replies in order, recording each part as it goes out, so a crash re-sends at
most the part in flight and never loses one. Two things keep a part from going out twice: within
the process the chat's delivery lock (a streamed answer's last edit takes it too, see
`palui.turns.ending`), across processes the chat's delivery lease.

Whether a part is already in the chat (in its preview, or sent by a sender that died before
recording it) is decided by `palui.delivery.shown`, before each part goes out. A row with
`reply_to` (a group's answer) sends part 0 as a reply to that message: threaded to what it answers.
A spoken row (`voice`) has one more part after its text, its voice message
(`palui.delivery.spoken`), recorded like the others; it is never looked for (a voice message
can't be edited), and a failure to speak or send it only skips it.

The delivery lease is fenced like a chat's: a sender that stalled past its lapse while another
process took the chat's outbox over records nothing more and stops (see `_deliver_held`).

A reply may hold a secret shown once (`palui.domain.sealed`: a sign-in link's token): it is sent
unmarked, and the record that makes the reply delivered (or dropped) also drops the secret from
the stored text.
"""

from __future__ import annotations

import asyncio
import functools

from palui.db import Store
from palui.delivery.retry import Retries
from palui.delivery.shown import Shown
from palui.delivery.spoken import Spoken, VoiceReplies, send_spoken, with_voice
from palui.domain import EVERY_CHAT, ChatScope, Fence, OutboxItem
from palui.domain.sealed import spent, unsealed
from palui.errors import ChannelError, LeaseLost
from palui.logs import get_logger
from palui.observe import Metrics, Tracing
from palui.ports.channel import Part, Replies
from palui.ports.leases import SenderLeases, Spawner

log = get_logger("palui.delivery.outbox")

Ready = tuple[int, OutboxItem]  # (`Outbox.mark` before the reply was stored, the reply)
ROUND_SLOTS = 1024  # `Outbox.mark`: chats sharing a slot only cost each other a read


class Outbox:
    def __init__(
        self,
        store: Store,
        channel: Replies,
        senders: SenderLeases,
        background: Spawner,
        *,
        scope: ChatScope = EVERY_CHAT,
        chat_leases: SenderLeases | None = None,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
        voice: VoiceReplies | None = None,
    ) -> None:
        self._voice = voice  # spoken replies' voice messages (`palui.delivery.spoken`)
        self._tracing = tracing or Tracing()
        self._metrics = metrics or Metrics()  # the replies it could not send yet
        self._stuck: set[int] = set()  # chats whose last delivery stopped on a failed send
        self._store = store
        self._chat_leases = chat_leases  # the chats' workers' leases: they send under them
        self._scope = scope  # a chat outside it is another process's to send
        self._channel = channel
        self._senders = senders  # who sends a chat's outbox: one process at a time
        self._background = background
        self._retries = Retries(background, self.deliver)  # a failed send tried again soon
        # Per chat, only while it is in use (`_forget_lock`).
        self._locks: dict[int, asyncio.Lock] = {}
        self._shown = Shown(store, channel, senders.holder)  # which parts the chat shows
        # Delivery rounds begun in this process, counted per slot of chats (`mark`): bounded,
        # and a chat's own rounds always move its slot.
        self._rounds = [0] * ROUND_SLOTS

    def lock(self, chat_id: int) -> asyncio.Lock:
        """Held while the chat's reply parts go out."""
        lock = self._locks.get(chat_id)
        if lock is None:
            lock = self._locks[chat_id] = asyncio.Lock()
        return lock

    def busy(self, chat_id: int) -> bool:
        lock = self._locks.get(chat_id)
        return lock is not None and lock.locked()

    async def add(self, chat_id: int, text: str) -> None:
        """Store a reply and send it (with whatever waits before it)."""
        await self._store.outbox.add(chat_id, text, sender=self._senders.holder)
        await self.deliver(chat_id)

    def deliver_soon(self, chat_id: int) -> None:
        """Something new is in the chat's outbox (e.g. from palui__send_message)."""
        if not self._background.closed:
            self._background.spawn(self.deliver(chat_id))

    def delivered(self, chat_id: int) -> bool:
        """Whether the chat's last delivery here sent everything it found (none stopped on a
        failed send since)."""
        return chat_id not in self._stuck

    def retry_in(self, chat_id: int) -> float | None:
        """The delay the chat's next retry (after a failed send) was scheduled with; None when
        none waits."""
        return self._retries.due_in(chat_id)

    def retry_stuck(self) -> None:
        """The channel answers again (an outage ended): what it failed to take goes out now."""
        self._retries.kick()

    def mark(self, chat_id: int) -> int:
        """Where this process's deliveries to the chat stand, for `deliver(ready=…)`."""
        return self._rounds[chat_id % ROUND_SLOTS]

    async def deliver(
        self, chat_id: int, chat_fence: Fence | None = None, ready: Ready | None = None
    ) -> None:
        """Send the chat's undelivered replies in order, recording each part as it goes out.

        `chat_fence`: the chat's lease, which the caller (the chat's worker) holds. No other
        process sends the chat's outbox while it is held (`palui.db.leases`), so the replies go
        out under it, each part's record conditional on it, with no delivery lease taken and
        given back per turn.

        `ready`: (a `mark` taken before the reply was stored, the reply): a turn's end that
        found no earlier reply waiting (`palui.db.turns.Ended`). While no delivery round to the
        chat (or to a chat sharing its slot) began in this process since the mark (none can have
        sent it, nor can another process: the chat's lease excludes them), the reply is what
        waits: it goes out without a read of the outbox."""
        if not self._scope.serves(chat_id):
            return  # its replies stay pending for the process that serves the chat
        while True:
            lock = self.lock(chat_id)
            async with lock:
                if self._locks.get(chat_id) is not lock:
                    continue  # dropped while this waited (`_forget_lock`): take the current one
                try:
                    slot = chat_id % ROUND_SLOTS
                    still = ready is not None and ready[0] == self._rounds[slot]
                    known = ready[1] if ready is not None and still else None
                    self._rounds[slot] += 1
                    leases = self._chat_leases
                    if chat_fence is not None and leases is not None and leases.current(chat_fence):
                        await self._deliver_fenced(chat_id, chat_fence, leases, known)
                        return
                    async with self._senders.hold(chat_id) as fence:
                        if fence is not None:  # else another process sends it, until empty
                            await self._deliver_fenced(chat_id, fence, self._senders)
                finally:
                    self._forget_lock(chat_id, lock)
                return

    def _forget_lock(self, chat_id: int, lock: asyncio.Lock) -> None:
        """Called while holding `lock`: an idle chat keeps no lock, so the map holds the chats
        being delivered to, not every chat ever seen. One a task waits for is kept (a waiter
        that finds its lock dropped takes the current one, see `deliver`)."""
        if not getattr(lock, "_waiters", None) and self._locks.get(chat_id) is lock:
            del self._locks[chat_id]

    async def _deliver_fenced(
        self, chat_id: int, fence: Fence, leases: SenderLeases, known: OutboxItem | None = None
    ) -> None:
        try:
            await self._deliver_held(chat_id, fence, leases, known)
        except LeaseLost:
            # Taken over while sending (this process stalled past the lease): the new
            # holder sends from what is recorded; this one sends nothing more.
            log.warning("delivery_lease_lost", chat_id=chat_id)
            self._metrics.stale_write_refused("delivery")

    async def _deliver_held(
        self, chat_id: int, fence: Fence, leases: SenderLeases, known: OutboxItem | None = None
    ) -> None:
        """Send under `fence`, taken from `leases`: the delivery lease, or the chat's own. The
        lease is confirmed right before each part goes out and the part's record is fenced;
        what remains unfenced is the send itself: a sender that stalls between its
        confirmation and Telegram's answer (for longer than half a lapse) may still put that
        one part in the chat after the lease was taken over, and the new holder, not seeing
        it recorded, sends it again.

        Under the delivery lease the outbox is read again until it is empty: other processes
        leave what they store to its holder. Under the chat's lease one read: what another
        process stores meanwhile goes out with this worker's next reply or by the sweeper.
        `known`: what waits, known without reading (see `deliver`)."""
        under_chat = leases is self._chat_leases
        record = functools.partial(self._store.outbox.part_sent, chat_lease=under_chat)
        pending = self._store.outbox.pending
        while items := [known] if known is not None else await pending(chat_id):
            known = None
            for position, item in enumerate(items):
                parts = with_voice(item, self._channel.render(unsealed(item.text)))
                # Once the reply is out (or dropped), its row keeps the text without secrets.
                recorded = functools.partial(record, item.id, fence=fence, kept=spent(item.text))
                try:
                    for index in range(item.parts_sent, len(parts)):
                        await leases.confirm(fence)
                        with self._tracing.span("palui.send", **{"palui.part": index}):
                            sent = await self._send(item, index, parts[index])
                        done = index + 1 == len(parts)
                        try:
                            await recorded(index + 1, done=done, message_id=sent)
                        except Exception:
                            # In the chat but not on record (e.g. the database went away): the
                            # next delivery records the message it became instead of sending it.
                            self._shown.unrecorded(item.id, index, sent)
                            raise
                        if done:
                            self._shown.settled(item.id)
                except ChannelError as exc:
                    if exc.permanent:
                        log.error("reply_dropped", chat_id=chat_id, error=str(exc))
                        await recorded(len(parts), done=True)
                        self._shown.settled(item.id)
                        continue
                    log.warning("reply_delayed", chat_id=chat_id, error=str(exc))
                    self._stuck.add(chat_id)
                    self._metrics.outbox_waits(chat_id, len(items) - position, item.created_at)
                    self._retries.failed(chat_id, exc.retry_after_s)
                    return  # tried again soon (`retry`); order is kept by stopping here
            self._stuck.discard(chat_id)
            self._retries.delivered(chat_id)
            self._metrics.outbox_waits(chat_id, 0, None)
            if under_chat:
                return

    async def _send(self, item: OutboxItem, index: int, part: Part) -> int | None:
        """Put part `index` of `item` in the chat, unless it shows it already; the message it
        became (None: no ids)."""
        if isinstance(part, Spoken):  # never looked for: a voice message can't be edited
            return await send_spoken(self._channel, self._voice, item, part)
        if (shown := await self._shown.where(item, index, part)) is not None:
            return shown
        reply_to = item.reply_to if index == 0 else None
        try:
            return await self._channel.send_part(item.chat_id, part, reply_to=reply_to)
        except ChannelError as exc:
            if not exc.permanent:
                self._shown.doubt(item.id)  # it may have reached the chat all the same
            raise
