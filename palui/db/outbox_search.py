"""Where to look for a reply part a dead sender may have put in the chat without recording it.

Read only when a sender takes over a row that may have been in flight (`palui.delivery.outbox`),
never on the normal path. Two things come from the records:

- the floor: the newest message id that certainly came before the part. Replies go out in
  order, so every part of the chat's earlier replies, this reply's own parts before it, its
  preview, the message it answers and the person's messages of its turn all did;
- the named ids: every message the records say is something else (another reply's part, an
  approval card, an edit question, a preview). A probe edits the message it names, and an edit
  that succeeds changes that message, so these are never probed.
"""

from __future__ import annotations

import dataclasses
import json

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.models import ApprovalEdit, ApprovalRow, InboxUpdate, OutboxMessage, Turn
from palui.domain import OutboxItem


@dataclasses.dataclass(frozen=True, slots=True)
class Lookup:
    floor: int  # the part, if it is in the chat, has a greater id
    named: frozenset[int]  # ids above the floor that are other messages of ours


async def where_to_look(s: AsyncSession, item: OutboxItem) -> Lookup | None:
    """None when no floor is known (rows from before migration 0022 with nothing else to go
    by): the part is sent again, as it always was."""
    chat = item.chat_id
    known = [item.edit_message_id, item.reply_to]
    row = await s.get(OutboxMessage, item.id)
    if row is None:
        return None
    if row.parts_sent > 0 and row.last_message_id is None:
        return None  # its earlier parts are nowhere on record: a probe could edit one
    known.append(row.last_message_id)
    earlier = await s.execute(
        select(
            func.max(OutboxMessage.last_message_id), func.max(OutboxMessage.edit_message_id)
        ).where(OutboxMessage.chat_id == chat, OutboxMessage.id < item.id)
    )
    known.extend(earlier.one())
    if (turn_id := row.turn_id) is not None:
        turn = await s.get(Turn, turn_id)
        if turn is not None:
            known.extend((turn.preview_floor, turn.preview_message_id))
        of_turn = select(InboxUpdate.payload).where(InboxUpdate.turn_id == turn_id)
        payloads = await s.scalars(of_turn)
        known.extend(_message_id(payload) for payload in payloads)
    ids = [i for i in known if i is not None]
    if not ids:
        return None
    floor = max(ids)
    return Lookup(floor, frozenset(await _named_above(s, chat, floor)))


async def _named_above(s: AsyncSession, chat_id: int, floor: int) -> set[int]:
    named: set[int] = set()
    columns = (
        (OutboxMessage.last_message_id, OutboxMessage.chat_id),
        (OutboxMessage.edit_message_id, OutboxMessage.chat_id),
        (Turn.preview_message_id, Turn.chat_id),
        (ApprovalRow.message_id, ApprovalRow.chat_id),
        (ApprovalEdit.message_id, ApprovalEdit.chat_id),
        (ApprovalEdit.card_message_id, ApprovalEdit.chat_id),
    )
    for column, chat in columns:
        found = await s.scalars(select(column).where(chat == chat_id, column > floor))
        named.update(int(i) for i in found if i is not None)
    return named


def _message_id(payload: str) -> int | None:
    """The message an inbox row carries (`palui.chat.stored_inbound`: a stored `Inbound`)."""
    try:
        message_id = json.loads(payload).get("message_id")
        return int(message_id) if message_id is not None else None
    except (ValueError, TypeError, AttributeError):
        return None
