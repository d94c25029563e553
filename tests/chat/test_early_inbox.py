"""The inbox while Palui starts (palui.chat.early_inbox): an owner's private message is stored at
once (Telegram may be told it arrived); anything needing the full inbox's rules waits for it; and
the hand-over leaves no gap: what was stored is there when the chats start, what comes after
goes to the full inbox."""

from __future__ import annotations

import asyncio

from palui.chat.early_inbox import EarlyInbox
from palui.domain import ChatKind, ChatUser, Inbound
from tests.conftest import OWNER_CHAT, OWNER_ID

GROUP = -100200300
STRANGER = 555


class FullInbox:
    def __init__(self) -> None:
        self.accepted: list[int] = []

    def is_allowed(self, user_id: int) -> bool:
        return user_id == OWNER_ID

    async def accept(self, inbound: Inbound) -> bool:
        self.accepted.append(inbound.update_id)
        return True


class NoReactions:
    async def react(self, chat_id: int, message_id: int, emoji: str) -> None:
        raise AssertionError("no turn runs: nothing waits behind one")


def said(update_id: int, user_id: int = OWNER_ID, chat_id: int = OWNER_CHAT) -> Inbound:
    kind = ChatKind.PRIVATE if chat_id > 0 else ChatKind.GROUP
    return Inbound(
        update_id, chat_id, ChatUser(user_id), "hi", message_id=update_id, chat_kind=kind
    )


async def test_an_owners_message_is_stored_at_once_and_the_rest_waits_for_the_full_inbox(
    store,
) -> None:
    early, full = EarlyInbox(store, NoReactions(), frozenset({OWNER_ID})), FullInbox()

    assert await early.accept(said(1))  # stored: Telegram may be told
    assert [item.update_id for item in await store.inbox.pending()] == [1]
    stranger = asyncio.ensure_future(early.accept(said(2, STRANGER, STRANGER)))
    in_group = asyncio.ensure_future(early.accept(said(3, chat_id=GROUP)))
    await asyncio.sleep(0)
    assert not stranger.done() and not in_group.done()  # unacknowledged until the full inbox

    seen_at_start: list[int] = []

    async def start() -> None:  # the chats' start: what waits in the inbox is taken up
        seen_at_start.extend(item.update_id for item in await store.inbox.pending())

    await early.open(full, start)
    assert await stranger and await in_group
    assert await early.accept(said(4))
    assert seen_at_start == [1]
    assert full.accepted == [2, 3, 4]  # the full inbox's rules decide these
    assert [item.update_id for item in await store.inbox.pending()] == [1]


async def test_nothing_is_stored_between_the_chats_looking_and_the_hand_over(store) -> None:
    early, full = EarlyInbox(store, NoReactions(), frozenset({OWNER_ID})), FullInbox()
    looking, may_finish = asyncio.Event(), asyncio.Event()

    async def start() -> None:
        looking.set()
        await may_finish.wait()

    opening = asyncio.ensure_future(early.open(full, start))
    await looking.wait()
    arriving = asyncio.ensure_future(early.accept(said(7)))  # while the chats look
    await asyncio.sleep(0)
    assert not arriving.done()
    may_finish.set()
    await opening
    assert await arriving
    assert full.accepted == [7]  # to the full inbox, not stored behind the chats' back
    assert await store.inbox.pending() == []
