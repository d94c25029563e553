"""Looking for a message of ours whose id a crash kept from the records (`palui.delivery.shown`
decides when to look; the channel knows how)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from palui.ports.sending import Part


class Leftovers(Protocol):
    def newest_sent_id(self, chat_id: int) -> int | None:
        """The newest message this process has sent in the chat (None: none it knows of)."""
        ...

    async def find_unrecorded(self, chat_id: int, floor: int, text: str) -> int | None:
        """A message of ours sent above message `floor` and showing `text`, whose id a crash
        kept from being recorded; None when none is found within a few probes. Each probe edits
        a candidate to `text` (a channel that can't look returns None)."""
        ...

    async def find_part(
        self, chat_id: int, floor: int, part: Part, skip: Collection[int]
    ) -> int | None:
        """`find_unrecorded` for a reply part (`render`'s), edited exactly as `send_part` sends
        it; the ids in `skip` are other messages of ours and are never edited."""
        ...
