"""The chat channel's ports, each narrow: a consumer asks for the one it uses.

`Sending` (a reply's typed rendered `Part`s) and `Notices`; `Cards`; `Files`; `Reactions`;
`Leftovers` (looking for a message whose id a crash kept from the records); and the few
combinations consumers need: `Replies` (the outbox's), `Answering` (a turn's), `Notifying`
(cards and notices). `Channel` is all of them: what a real adapter (Telegram, the console)
implements and only the composition root (`palui.app`) holds. Streaming is `palui.ports.streaming`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from palui.domain import Card
from palui.ports.streaming import Streaming


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


class Cards(Protocol):
    async def send_card(self, chat_id: int, card: Card, *, reply_to: int | None = None) -> int:
        """Send a card (`reply_to`: threaded to that message, as in a group); its message id."""
        ...

    async def edit_card(self, chat_id: int, message_id: int, card: Card) -> None:
        """Replace a card's text and buttons (no buttons: they are removed)."""
        ...

    async def answer_callback(self, callback_query_id: str, text: str) -> None: ...


class Notes(Cards, Protocol):
    """Cards that are taken away again: a server's questions and a call's progress note."""

    async def delete_message(self, chat_id: int, message_id: int) -> None: ...


class Files(Protocol):
    async def download(self, file_id: str, max_bytes: int) -> bytes:
        """A file a person sent (`Attachment.file_id`). Raises `FileTooLarge` past `max_bytes`
        (or the channel's own limit), `ChannelError` when it can't be fetched or the channel
        holds no files (the console)."""
        ...


class Reactions(Protocol):
    async def react(self, chat_id: int, message_id: int, emoji: str) -> None:
        """Best effort: mark a person's message with an emoji reaction (👀: seen, queued)."""
        ...


class Leftovers(Protocol):
    def newest_sent_id(self, chat_id: int) -> int | None:
        """The newest message this process has sent in the chat (None: none it knows of)."""
        ...

    async def find_unrecorded(self, chat_id: int, floor: int, text: str) -> int | None:
        """A message of ours sent above message `floor` and showing `text`, whose id a crash
        kept from being recorded; None when none is found within a few probes. Each probe edits
        a candidate to `text` (a channel that can't look returns None). Raises a transient
        `ChannelError` when the channel could not be asked (an outage): the message may be
        there, and a re-run is not to start a preview of its own beside it."""
        ...

    async def find_part(
        self, chat_id: int, floor: int, part: Part, skip: Collection[int]
    ) -> int | None:
        """`find_unrecorded` for a reply part (`render`'s), edited exactly as `send_part` sends
        it; the ids in `skip` are other messages of ours and are never edited. Raises a
        transient `ChannelError` when the channel could not be asked (an outage): the part,
        which may be there, is not to be sent yet."""
        ...


class Voice(Protocol):
    async def send_voice(
        self, chat_id: int, audio: bytes, *, reply_to: int | None = None
    ) -> int | None:
        """Send OGG/Opus audio as a voice message; the message id (None: a channel without
        voice, which sends nothing). Raises `ChannelError` when it can't be sent."""
        ...


class Replies(Sending, Leftovers, Voice, Protocol):
    """What the outbox sends through: parts (a spoken answer's voice message too), and the
    search for parts a crash left unrecorded."""


class Answering(Replies, Notices, Streaming, Protocol):
    """What a turn answers through: its stream, its typing, and the search for its preview."""


class Notifying(Cards, Notices, Protocol):
    """Cards and notices: what answers a tap, a sheet or a stranger."""


class Channel(Answering, Notifying, Files, Reactions, Protocol):
    """Where replies go and what people send comes from."""
