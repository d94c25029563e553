"""A preview is fenced by its turn's chat lease: once the lease is lost (another process took
the chat over and may have taken the preview over too), the stalled holder neither edits nor
removes it."""

from __future__ import annotations

import asyncio

from palui.delivery.preview import StreamingReply
from palui.errors import LeaseLost

CHAT = 1001


class Calls:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.edited: list[tuple[int, str]] = []
        self.deleted: list[int] = []
        self.lost = False
        self.previewed = asyncio.Event()
        self.refused = asyncio.Event()  # the guard said no

    async def send(self, text: str, html: bool) -> int:
        self.sent.append(text)
        self.previewed.set()
        return 7

    async def edit(self, message_id: int, text: str, html: bool) -> None:
        self.edited.append((message_id, text))

    async def delete(self, message_id: int) -> None:
        self.deleted.append(message_id)

    async def guard(self) -> None:
        if self.lost:
            self.refused.set()
            raise LeaseLost(CHAT)


async def noted(_: int) -> None:
    return None


async def test_a_preview_is_neither_edited_nor_removed_once_the_lease_is_lost() -> None:
    calls = Calls()
    stream = StreamingReply(calls.send, calls.edit, delete=calls.delete, min_interval_s=0)
    stream.watch_preview(noted, guard=calls.guard)
    await stream.push("The first words of an answer that streams, long enough to show.")
    await asyncio.wait_for(calls.previewed.wait(), 5)
    calls.lost = True
    await stream.push(" More words arrive after the lease was taken over.")
    await asyncio.wait_for(calls.refused.wait(), 5)  # the next preview edit was refused
    calls.refused.clear()
    await stream.discard()
    assert calls.refused.is_set()  # and so was the removal
    assert calls.sent == ["The first words of an answer that streams, long enough to show."]
    assert calls.edited == []
    assert calls.deleted == []


async def test_a_preview_goes_on_while_the_lease_holds() -> None:
    calls = Calls()
    stream = StreamingReply(calls.send, calls.edit, delete=calls.delete, min_interval_s=0)
    stream.watch_preview(noted, guard=calls.guard)
    await stream.push("The first words of an answer that streams, long enough to show.")
    await asyncio.wait_for(calls.previewed.wait(), 5)
    await stream.discard()
    assert calls.deleted == [7]
