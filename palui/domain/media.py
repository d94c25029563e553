"""What an inbound message carries besides its text: a file, where it was said, whose words.

Channel-neutral: the Telegram adapter fills these from an update (`palui.channels.telegram`),
the inbox stores them with the inbound (`palui.chat.stored_inbound`), and a turn reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class AttachmentKind(StrEnum):
    VOICE = "voice"
    AUDIO = "audio"
    PHOTO = "photo"
    DOCUMENT = "document"


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file sent with a message, not yet downloaded (the channel fetches it by `file_id`).

    For a photo, the size chosen is the largest the channel offered."""

    kind: AttachmentKind
    file_id: str
    file_size: int | None = None  # bytes, as the channel reports it (may be missing)
    mime_type: str | None = None
    file_name: str | None = None
    duration_s: int | None = None  # voice and audio
    # An audio file's tags, as its sender set them (someone else's words, like its transcript).
    title: str | None = None
    performer: str | None = None


class ChatKind(StrEnum):
    PRIVATE = "private"
    GROUP = "group"
    SUPERGROUP = "supergroup"
    CHANNEL = "channel"


class ForeignKind(StrEnum):
    """Content in a message that is someone else's words (untrusted: it taints the turn)."""

    FORWARD = "forward"  # a forwarded message whose origin is not the sender
    REPLY = "reply"  # the replied-to message, written by someone else
    DOCUMENT = "document"
    PHOTO = "photo"
    AUDIO = "audio"  # an audio file (not a voice note recorded in the chat): its transcript


@dataclass(frozen=True, slots=True)
class Foreign:
    """One piece of someone else's words in a message, and how a card names it.

    `label` completes "this turn read …", e.g. "a document you sent: invoice.pdf" or
    "a forwarded message from Ana"."""

    kind: ForeignKind
    label: str
    text: str | None = None  # the words themselves, where the channel gave them (a forward's text)
