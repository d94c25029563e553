"""Issue 29's database cut: a reply part Telegram took whose record could not be written (the
database went away between the send and its record) is recorded by the next delivery as the
message Telegram said it became, never sent a second time; and nothing is lost meanwhile."""

from __future__ import annotations

from typing import Any

import pytest

from palui.chat.background import Background
from palui.chat.leases import ChatLeases
from palui.db.models import OutboxMessage
from palui.delivery.outbox import Outbox

CHAT = 4343


class Chat:
    """A channel whose parts reach the chat and can be found there."""

    def __init__(self) -> None:
        self.messages: dict[int, str] = {}
        self.lookups = 0

    def render(self, text: str) -> list[str]:
        return [text]

    async def send_part(self, chat_id: int, part: Any, *, reply_to: int | None = None) -> int:
        message_id = 200 + len(self.messages) + 1
        self.messages[message_id] = part
        return message_id

    async def find_part(self, chat_id: int, floor: int, part: Any, skip: Any) -> int | None:
        # As the Telegram adapter: never at or past an id this process sent since (the part
        # sent from here is past that bound), so a search finds nothing.
        self.lookups += 1
        return None


async def test_a_part_whose_record_failed_is_recorded_not_sent_again(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = Chat()
    senders = ChatLeases(store.delivery_leases, ttl_s=60, what="delivery")
    sender = Outbox(store, chat, senders, Background())  # type: ignore[arg-type]
    earlier = await store.outbox.add(CHAT, "earlier")
    await store.outbox.part_sent(earlier, 1, done=True, message_id=200)
    reply = await store.outbox.add(CHAT, "the answer")

    record = store.outbox.part_sent
    cut = {"left": 1}

    async def cut_once(*args: Any, **kwargs: Any) -> Any:
        if cut["left"]:
            cut["left"] -= 1
            raise ConnectionError("the database went away")
        return await record(*args, **kwargs)

    monkeypatch.setattr(store.outbox, "part_sent", cut_once)
    with pytest.raises(ConnectionError):
        await sender.deliver(CHAT)  # in the chat, not on record
    await sender.deliver(CHAT)  # the database is back: the sweeper's next delivery

    assert list(chat.messages.values()) == ["the answer"]  # once
    assert chat.lookups == 0  # its id is known here: nothing to look for
    async with store.db.session() as s:
        row = await s.get(OutboxMessage, reply)
        assert (row.parts_sent, row.last_message_id, row.sent_at is not None) == (1, 201, True)
