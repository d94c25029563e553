"""The outbox: replies committed before they are sent, and how many of each one's parts are
already in the chat (so a restart sends the rest, never a part twice), and the message the
newest of them became (where a search for a part sent but not recorded starts,
`palui.db.outbox_search`)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.sql.dml import Update

from palui.db.leases import Table as LeaseTable
from palui.db.leases import fence_params, held_by_params
from palui.db.models import ChatLease, DeliveryLease, OutboxMessage, utcnow
from palui.db.outbox_search import Lookup, where_to_look
from palui.db.repo import DIALECTS, Repo, insert_for
from palui.domain import Fence, OutboxItem
from palui.errors import LeaseLost

RECORD_ATTEMPTS = 4
OUTBOX = cast(Table, OutboxMessage.__table__)


def _part_record(lease: LeaseTable | None, last_message: bool) -> Update:
    """A part's record: under the `lease` table's fence, with the message it became."""
    fence = [] if lease is None else [held_by_params(lease)]
    values: dict[str, Any] = {
        "parts_sent": bindparam("parts_sent"),
        "sent_at": bindparam("sent_at"),
    }
    if last_message:
        values["last_message_id"] = bindparam("last_message_id")
    return (
        update(OUTBOX)
        .where(OUTBOX.c.id == bindparam("outbox_id"), *fence)
        .values(values)
        .returning(OUTBOX.c.id)
    )


# Built once, run with params (a statement built per call costs several times its run in
# SQLAlchemy's CPU, palui.db.leases): by fence (none, chat lease, delivery lease) and whether
# the part's message id is known.
_PART_RECORDS = {
    (lease, last): _part_record(lease, last)
    for lease in (None, ChatLease, DeliveryLease)
    for last in (False, True)
}


def _add_reply(is_sqlite: bool, once: bool) -> Any:
    """A reply's INSERT; `once`: none when a reply about the same update is stored already."""
    added = insert_for(is_sqlite)(OUTBOX).values({k: bindparam(k) for k in _REPLY_COLUMNS})
    if once:
        added = added.on_conflict_do_nothing(index_elements=["about_update"])
    return added.returning(OUTBOX.c.id)


_REPLY_COLUMNS = (
    "chat_id",
    "text",
    "sender",
    "reply_to",
    "about_update",
    "parts_sent",
    "created_at",
)
_ADD_REPLY = {(d, once): _add_reply(d, once) for d in DIALECTS for once in (False, True)}


class OutboxRepo(Repo):
    async def add(
        self,
        chat_id: int,
        text: str,
        *,
        sender: str | None = None,
        reply_to: int | None = None,
        about_update: int | None = None,
    ) -> int | None:
        """`sender`: the process storing it (its lease holder name); `reply_to`: the message it
        answers (a group's threading). `about_update`: the inbox update it is about, stored
        once: None when a reply about it is stored already (a re-run after a crash)."""
        row = {"chat_id": chat_id, "text": text, "sender": sender, "reply_to": reply_to}
        row |= {"about_update": about_update, "parts_sent": 0, "created_at": utcnow()}
        added = _ADD_REPLY[self._db.is_sqlite, about_update is not None]
        async with self._db.session() as s, s.begin():
            return await s.scalar(added, row)

    async def pending(self, chat_id: int | None = None) -> list[OutboxItem]:
        query = select(OutboxMessage).where(OutboxMessage.sent_at.is_(None))
        if chat_id is not None:
            query = query.where(OutboxMessage.chat_id == chat_id)
        async with self._db.session() as s:
            rows = await s.scalars(query.order_by(OutboxMessage.id))
            return [
                OutboxItem(
                    r.id,
                    r.chat_id,
                    r.text,
                    r.parts_sent,
                    r.edit_message_id,
                    r.reply_to,
                    r.created_at,
                    r.sender,
                    r.voice,
                )
                for r in rows
            ]

    async def part_sent(
        self,
        outbox_id: int,
        parts_sent: int,
        *,
        done: bool,
        fence: Fence | None = None,
        chat_lease: bool = False,
        message_id: int | None = None,
        kept: str | None = None,
    ) -> None:
        """Record delivered parts. The part is already in the chat, so a failure here would make
        the sweeper send it again: a busy database gets a few more tries first. Under a `fence`
        (the chat's delivery lease, or with `chat_lease` the chat's own lease its worker sends
        under), a sender whose lease was taken over records nothing and gets `LeaseLost`: the
        new holder reads the row as it stands and goes on from there. `message_id`: the message
        the part became (None where the channel has no ids), written in the same UPDATE.
        `kept`: what a `done` row keeps of its text (`palui.domain.sealed`: a delivered reply
        without its secrets), written in the same transaction."""
        lease = None if fence is None else ChatLease if chat_lease else DeliveryLease
        record = _PART_RECORDS[lease, message_id is not None]
        params: dict[str, Any] = {
            "outbox_id": outbox_id,
            "parts_sent": parts_sent,
            "sent_at": utcnow() if done else None,
        }
        if message_id is not None:
            params["last_message_id"] = message_id
        if fence is not None:
            params.update(fence_params(fence))
        for attempt in range(RECORD_ATTEMPTS):
            try:
                async with self._db.session() as s, s.begin():
                    recorded = await s.execute(record, params)
                    if fence is not None and recorded.scalar_one_or_none() is None:
                        raise LeaseLost(fence.chat_id, "chat" if chat_lease else "delivery")
                    if done and kept is not None:
                        forget = update(OUTBOX).where(OUTBOX.c.id == outbox_id)
                        await s.execute(forget.values(text=kept))
                return
            except OperationalError:
                if attempt + 1 == RECORD_ATTEMPTS:
                    raise
                await asyncio.sleep(0.2 * 2**attempt)

    async def where_to_look(self, item: OutboxItem) -> Lookup | None:
        """Where a part of `item` that a dead sender may have sent would be (None: unknown)."""
        async with self._db.session() as s:
            return await where_to_look(s, item)
