"""Sending a reply: its typed rendered parts, and the notices and actions around it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Part:
    """One message of a reply as the channel renders it: `html` to send formatted, `plain` the
    same words to send if the channel refuses the formatting (the console shows `plain`)."""

    html: str
    plain: str


class Sending(Protocol):
    """Where a reply's parts go (the outbox's only way into the chat)."""

    def render(self, text: str) -> Sequence[Part]:
        """The reply as the messages it takes (Telegram: 4096-character pieces)."""
        ...

    async def send_part(
        self, chat_id: int, part: Part, *, reply_to: int | None = None
    ) -> int | None:
        """Send one part; `reply_to`: as a reply to that message (sent anyway if it is gone).
        Returns the message id (None: a channel without ids)."""
        ...

    async def edit_part(self, chat_id: int, message_id: int, part: Part) -> None:
        """Make an existing message (a streamed preview) show `part`. Showing it already counts
        as done, so repeating an edit is harmless. Raises a permanent `ChannelError` when the
        message can't be edited (deleted, too old), a transient one when it may work later."""
        ...

    async def delete_message(self, chat_id: int, message_id: int) -> None:
        """Remove a message; raises `ChannelError` when it can't be."""
        ...


class Notices(Protocol):
    """What is shown and not stored."""

    async def send_notice(self, chat_id: int, text: str) -> None:
        """Best effort, not stored: e.g. the refusal a stranger gets."""
        ...

    async def typing(self, chat_id: int) -> None: ...
