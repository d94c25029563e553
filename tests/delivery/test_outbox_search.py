"""Which outbox rows are looked for before a part is sent again, and where: only a row a sender
that is gone may have had in flight (stored by another process, or before this one started
where no process is on record, or whose send failed here), only its first part, above the
newest message known before it, past every message the records name as something else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert, update

from palui.chat.background import Background
from palui.chat.leases import ChatLeases
from palui.db.models import ApprovalRow, OutboxMessage
from palui.delivery.outbox import Outbox
from palui.errors import ChannelError

CHAT = 4242


class Chat:
    """A channel whose parts reach the chat; `lose_answers` sends fail after going out (a
    timeout on the way back); `find_part` finds a part that is in the chat."""

    def __init__(self, lose_answers: int = 0) -> None:
        self.messages: dict[int, str] = {}
        self.sends = 0
        self.lookups: list[tuple[int, str, frozenset[int]]] = []
        self._lose = lose_answers

    def render(self, text: str) -> list[str]:
        return text.split("|")  # a test's parts

    async def send_part(self, chat_id: int, part: Any, *, reply_to: int | None = None) -> int:
        self.sends += 1
        message_id = 100 + len(self.messages) + 1
        self.messages[message_id] = part
        if self._lose:
            self._lose -= 1
            raise ChannelError("Telegram timed out")
        return message_id

    async def find_part(self, chat_id: int, floor: int, part: Any, skip: Any) -> int | None:
        self.lookups.append((floor, part, frozenset(skip)))
        found = [i for i, text in self.messages.items() if i > floor and text == part]
        return min(found) if found else None


def outbox(store: Any, chat: Chat, holder: str | None = None) -> Outbox:
    senders = ChatLeases(store.delivery_leases, ttl_s=60, what="delivery", holder=holder)
    return Outbox(store, chat, senders, Background())  # type: ignore[arg-type]


async def sent_before(store: Any, message_id: int) -> None:
    """An earlier reply in the chat, delivered as message `message_id`."""
    earlier = await store.outbox.add(CHAT, "earlier")
    await store.outbox.part_sent(earlier, 1, done=True, message_id=message_id)


async def recorded(store: Any, outbox_id: int) -> tuple[int, int | None, bool]:
    async with store.db.session() as s:
        row = await s.get(OutboxMessage, outbox_id)
        return row.parts_sent, row.last_message_id, row.sent_at is not None


async def test_a_reply_sent_normally_is_never_looked_for(store) -> None:
    chat = Chat()
    sender = outbox(store, chat)
    await sent_before(store, 100)
    await sender.add(CHAT, "one|two")
    assert chat.lookups == []
    assert chat.sends == 2


async def test_a_send_that_failed_here_is_looked_for_before_it_is_sent_again(store) -> None:
    chat = Chat(lose_answers=1)
    sender = outbox(store, chat)
    await sent_before(store, 100)
    reply = await store.outbox.add(CHAT, "hello")
    await sender.deliver(CHAT)  # out, but the answer was lost: still pending
    assert await recorded(store, reply) == (0, None, False)

    await sender.deliver(CHAT)  # the sweeper's retry
    assert chat.sends == 1  # found, not sent again
    assert chat.lookups == [(100, "hello", frozenset())]
    assert await recorded(store, reply) == (1, 101, True)


async def test_a_row_stored_before_this_sender_started_is_looked_for_at_its_first_part_only(
    store,
) -> None:
    chat = Chat()
    await sent_before(store, 100)
    reply = await store.outbox.add(CHAT, "one|two")
    chat.messages[101] = "one"  # a dead sender put it in the chat and recorded nothing
    async with store.db.session() as s, s.begin():  # stored before this process started
        old = datetime.now(UTC) - timedelta(minutes=1)
        await s.execute(update(OutboxMessage).values(created_at=old))
    await outbox(store, chat).deliver(CHAT)
    assert chat.sends == 1  # "two" only
    assert [part for _, part, _ in chat.lookups] == ["one"]
    assert await recorded(store, reply) == (2, 102, True)


async def test_only_a_row_another_process_stored_and_left_pending_is_looked_for(store) -> None:
    chat = Chat()
    sender = outbox(store, chat, holder="here:1:a")
    await sent_before(store, 100)
    await store.outbox.add(CHAT, "mine", sender="here:1:a")
    await store.outbox.add(CHAT, "theirs", sender="there:2:b")  # it died sending this
    await sender.deliver(CHAT)
    assert [part for _, part, _ in chat.lookups] == ["theirs"]
    assert chat.sends == 2


async def test_the_search_starts_above_every_earlier_message_and_skips_what_records_name(
    store,
) -> None:
    await sent_before(store, 100)
    reply = await store.outbox.add(CHAT, "hello")
    later = await store.outbox.add(CHAT, "later")
    async with store.db.session() as s, s.begin():
        await s.execute(
            update(OutboxMessage).where(OutboxMessage.id == later).values(last_message_id=103)
        )
        await s.execute(
            insert(ApprovalRow).values(
                id="a1", token="t1", turn_id="x", chat_id=CHAT, call_id="c", tool="t",
                arguments="{}", digest="d", tool_class="write", why="", decision_id="d1",
                status="pending", message_id=102, expires_at=datetime.now(UTC),
            )
        )  # fmt: skip
    [item] = [i for i in await store.outbox.pending(CHAT) if i.id == reply]
    lookup = await store.outbox.where_to_look(item)
    assert lookup is not None
    assert lookup.floor == 100
    assert lookup.named == {102, 103}


async def test_a_row_whose_earlier_parts_are_on_no_record_is_not_searched(store) -> None:
    await sent_before(store, 100)
    reply = await store.outbox.add(CHAT, "one|two")
    async with store.db.session() as s, s.begin():  # sent before migration 0022
        await s.execute(update(OutboxMessage).where(OutboxMessage.id == reply).values(parts_sent=1))
    [item] = [i for i in await store.outbox.pending(CHAT) if i.id == reply]
    assert await store.outbox.where_to_look(item) is None
