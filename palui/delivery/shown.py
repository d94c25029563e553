"""Whether an answer part is already on screen: the ONE place that decides it.

A part is shown at most once. Before a part goes out as a new message, this decides whether the
chat shows it already, and where:

- in its preview: a streamed answer's first part replaces the preview its row names
  (`into_preview`). An edit is idempotent (a repeat after a crash between the edit and its record
  changes nothing), so the answer is shown once either way. A preview that can't be edited any
  more (deleted, too old) is removed, or else marked as replaced, and the part goes out anew;
- as a message nobody recorded: its sender died (kill -9) after the channel accepted it and
  before its record. A row another process stored (or, with none on record, one stored before
  this process started) and left pending may have been in flight then; so may a row whose send
  failed here (`suspect`). Only for such rows the part is looked for (`Leftovers`, the channel's),
  above the newest message known before it and never at an id the records name as something
  else (`palui.db.outbox_search`); the message found is recorded as the part. The normal path
  costs no probe and no statement;
- a chat turn's preview an interrupted run was sending when it died (`find_unrecorded_preview`):
  found by the text it was sent with, above the floor recorded before it went out
  (`preview_floor`), and recorded as that run's preview, which the re-run takes over and its
  answer replaces. Looked for before the re-run starts, strictly as a part is: when Telegram
  can't be asked, the re-run does not start (a transient `ChannelError` to the chat's worker,
  which looks again in a few seconds), since a fresh preview would leave the old one on screen
  too. Nothing was started or counted meanwhile, and no model was asked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import UTC, datetime

from palui.db import Store
from palui.delivery.pacer import REPLACED
from palui.domain import Inbound, OutboxItem
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports.channel import Leftovers, Part, Replies

log = get_logger("palui.delivery")


class Shown:
    """The outbox's memory of which rows may be in the chat unrecorded (one per process)."""

    def __init__(self, store: Store, channel: Replies, holder: str) -> None:
        self._store = store
        self._channel = channel
        self._holder = holder  # this process, as the outbox rows name their sender
        self._started = datetime.now(UTC)
        self._cleared: set[int] = set()  # rows already looked for: their parts went out here
        self._doubt: set[int] = set()  # rows whose send (or record) failed here, until settled
        # Parts sent here whose record failed (the database went away): (row, part) -> the
        # message Telegram said it became. A search could not find it: the Telegram adapter
        # never probes at or past an id this process sent since.
        self._unrecorded: dict[tuple[int, int], int] = {}

    async def where(self, item: OutboxItem, index: int, part: Part) -> int | None:
        """The message already showing part `index` of `item` (its preview, or one a dead
        sender left unrecorded), else None: the part is to be sent."""
        if (sent := self._unrecorded.pop((item.id, index), None)) is not None:
            log.info("reply_part_adopted", chat_id=item.chat_id, outbox_id=item.id, id=sent)
            return sent  # sent from here, its record lost: recorded now, not sent again
        preview = item.edit_message_id if index == 0 else None
        if preview is not None and await self._into_preview(item.chat_id, preview, part):
            return preview
        if self._suspect(item):
            return await self._find(item, part)
        return None

    def doubt(self, outbox_id: int) -> None:
        """A send failed: the part may be in the chat all the same."""
        self._doubt.add(outbox_id)

    def unrecorded(self, outbox_id: int, index: int, message_id: int | None) -> None:
        """Part `index` went out (as `message_id`) but its record failed: the next delivery
        records that message instead of sending the part again."""
        if message_id is None:
            self._doubt.add(outbox_id)  # no id to go by: look for it
        else:
            self._unrecorded[outbox_id, index] = message_id

    def settled(self, outbox_id: int) -> None:
        """A row wholly delivered (or dropped) is suspect no more: forget it."""
        self._doubt.discard(outbox_id)
        self._cleared.discard(outbox_id)
        for key in [key for key in self._unrecorded if key[0] == outbox_id]:
            del self._unrecorded[key]

    def _suspect(self, item: OutboxItem) -> bool:
        """May a sender that is gone have sent this row's next part without recording it? A row
        another process stored (or, where no process is on record, one stored before this one
        started) and left pending may have been in flight when that process died: this
        process holds the chat's lease now, so the other is not sending it. Only the first
        part this process sends of it, not the ones after. And one whose send failed here may
        have gone out before the failure."""
        if item.id in self._doubt:
            return True
        if item.sender is not None:
            foreign = item.sender != self._holder
        else:
            foreign = item.created_at is not None and item.created_at < self._started
        return foreign and item.id not in self._cleared

    async def _find(self, item: OutboxItem, part: Part) -> int | None:
        """The part in the chat already, sent by a sender that died before recording it."""
        self._doubt.discard(item.id)
        self._cleared.add(item.id)  # the next parts went out from here, if at all
        lookup = await self._store.outbox.where_to_look(item)
        if lookup is None:
            return None  # nothing to search above: sent again, as before
        try:
            found = await self._channel.find_part(item.chat_id, lookup.floor, part, lookup.named)
        except ChannelError:
            # Telegram could not be asked (an outage): still suspect, looked for next time.
            self._doubt.add(item.id)
            self._cleared.discard(item.id)
            raise
        if found is not None:
            log.info("reply_part_adopted", chat_id=item.chat_id, outbox_id=item.id, id=found)
        return found

    async def _into_preview(self, chat_id: int, message_id: int, part: Part) -> bool:
        """Show the answer's first part in its preview (True). A preview that can't be edited
        is removed (or marked as replaced): False, the part is to go out as a new message."""
        try:
            await self._channel.edit_part(chat_id, message_id, part)
            return True
        except ChannelError as exc:
            if not exc.permanent:
                raise  # may work later: the sweeper tries again
            log.warning("preview_not_editable", chat_id=chat_id, error=str(exc))
        try:
            await self._channel.delete_message(chat_id, message_id)
        except ChannelError as exc:
            log.warning("preview_not_deleted", chat_id=chat_id, error=str(exc))
            [replaced] = self._channel.render(REPLACED)
            with contextlib.suppress(ChannelError):
                await self._channel.edit_part(chat_id, message_id, replaced)
        return False


async def find_unrecorded_preview(
    channel: Leftovers, store: Store, chat_id: int, update_ids: Sequence[int]
) -> int | None:
    """The preview an interrupted run on these updates was sending when it died, if it
    reached the chat: found (it shows the text it was sent with, edited to itself) and
    recorded as that run's, for the re-run's start to take over; not there, forgotten. Raises
    a transient `ChannelError`, settling nothing, when Telegram could not be asked."""
    left = await store.turns.unrecorded_preview(chat_id, update_ids)
    if left is None:
        return None
    turn_id, unrecorded = left
    found = await channel.find_unrecorded(chat_id, unrecorded.floor, unrecorded.text)
    await store.turns.settle_preview(turn_id, found)
    return found


def preview_floor(channel: Leftovers, chat_id: int, batch: Sequence[Inbound]) -> int | None:
    """The newest message id known in the chat: a preview sent now gets a greater one."""
    known = [i.message_id for i in batch if i.message_id is not None]
    if (sent := channel.newest_sent_id(chat_id)) is not None:
        known.append(sent)
    return max(known, default=None)
