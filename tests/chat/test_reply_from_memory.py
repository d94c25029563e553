"""A turn's reply goes out as its end stored it, with no read of the outbox (issue 14), only when
that is still what waits: its end found no older reply waiting, and no delivery round began in
this process since (another sender, such as the retry sweep, may have sent it meanwhile)."""

from __future__ import annotations

from typing import Any

from palui.chat.background import Background
from palui.chat.leases import ChatLeases
from palui.delivery.outbox import Outbox
from palui.domain import TurnStatus
from palui.domain.turn_record import TurnEnd, TurnStart
from tests.fakes.memory_channel import MemoryChannel

CHAT = 5150


def _outbox(store: Any, channel: MemoryChannel) -> tuple[Outbox, ChatLeases]:
    leases = ChatLeases(store.leases)
    senders = leases.sibling(store.delivery_leases, "delivery")
    return Outbox(store, channel, senders, Background(), chat_leases=leases), leases


async def _reply_hello(store: Any, outbox: Outbox, session: int, fence: Any) -> tuple[int, Any]:
    """A turn that answers "hello", its end stored under `fence`: the outbox's mark taken just
    before the end, and what the end stored."""
    await store.turns.start(TurnStart("t1", CHAT, session_id=session, fence=fence))
    mark = outbox.mark(CHAT)
    stored = await store.turns.finish(
        TurnEnd("t1", TurnStatus.DONE, [], reply="hello", fence=fence)
    )
    return mark, stored


async def test_a_reply_another_sender_sent_meanwhile_is_not_sent_again(store: Any) -> None:
    channel = MemoryChannel()
    outbox, leases = _outbox(store, channel)
    session = await store.chats.current_session(CHAT)
    async with leases.hold(CHAT) as fence:
        assert fence is not None
        mark, stored = await _reply_hello(store, outbox, session, fence)
        assert stored is not None and stored.alone  # nothing older waits
        await outbox.deliver(CHAT)  # another sender got there first (the retry sweep)
        await outbox.deliver(CHAT, fence, (mark, stored.item))
    assert channel.texts(CHAT) == ["hello"]
    assert await store.outbox.pending(CHAT) == []


async def test_an_older_reply_waiting_goes_out_first(store: Any) -> None:
    channel = MemoryChannel()
    outbox, leases = _outbox(store, channel)
    session = await store.chats.current_session(CHAT)
    await store.outbox.add(CHAT, "an older note")  # e.g. a send that failed for a moment
    async with leases.hold(CHAT) as fence:
        assert fence is not None
        mark, stored = await _reply_hello(store, outbox, session, fence)
        assert stored is not None and not stored.alone  # the worker reads the outbox then
        await outbox.deliver(CHAT, fence)
    assert outbox.mark(CHAT) != mark
    assert channel.texts(CHAT) == ["an older note", "hello"]


async def test_a_reply_alone_goes_out_from_memory(store: Any) -> None:
    channel = MemoryChannel()
    outbox, leases = _outbox(store, channel)
    session = await store.chats.current_session(CHAT)
    read = 0
    pending = store.outbox.pending

    async def counted(chat_id: int | None = None) -> Any:
        nonlocal read
        read += chat_id == CHAT
        return await pending(chat_id)

    store.outbox.pending = counted
    async with leases.hold(CHAT) as fence:
        assert fence is not None
        mark, stored = await _reply_hello(store, outbox, session, fence)
        assert stored is not None
        await outbox.deliver(CHAT + 1)  # another chat's round meanwhile: no matter
        await outbox.deliver(CHAT, fence, (mark, stored.item))
    assert channel.texts(CHAT) == ["hello"]
    assert read == 0
    assert await pending(CHAT) == []  # recorded as sent
