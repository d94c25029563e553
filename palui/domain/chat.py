"""A chat's work as it is stored: inbound updates, turns, replies waiting to go out; and the
fence of the lease under which a process does that work."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class TurnStatus(StrEnum):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    AWAITING_APPROVAL = "awaiting_approval"  # paused on approval cards; resumes after the taps


class InboxStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class InboxItem:
    """An update as the inbox stored it, waiting for (or bound to) its turn."""

    update_id: int
    chat_id: int | None
    user_id: int | None
    payload: dict[str, Any]
    turn_id: str | None
    attempts: int = 0  # turns started on it that never ended it (palui.chat.attempts)


@dataclass(frozen=True, slots=True)
class UnrecordedPreview:
    """A preview an interrupted turn was sending when it died, whose message id was never
    recorded: if it reached the chat, it is above `floor` and shows exactly `text`."""

    floor: int
    text: str


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """A reply not yet wholly in the chat: `parts_sent` of its parts already are."""

    id: int
    chat_id: int
    text: str
    parts_sent: int
    edit_message_id: int | None = None  # the preview message the first part is edited into
    reply_to: int | None = None  # the message the first part answers (threaded, in a group)
    created_at: datetime | None = None  # before the sender's start: a dead sender's, maybe
    sender: str | None = None  # the process that stored it (a lease holder name)
    voice: bool = False  # also spoken, after its text (a voice message: its last part)


@dataclass(frozen=True, slots=True)
class ChatScope:
    """The chats one process serves. `palui run` serves every chat; `palui chat` serves its
    console chat alone, so on the daemon's database it never sends another chat's replies,
    answers its messages, or runs its jobs, webhooks and paused turns (they wait for the daemon).
    """

    only: int | None = None  # None: every chat

    def serves(self, chat_id: int | None) -> bool:
        return self.only is None or chat_id == self.only


EVERY_CHAT = ChatScope()


@dataclass(frozen=True, slots=True)
class Fence:
    """A lease as its holder took it: which chat, who, and the generation of that take.

    Every take of a lease gets a new generation (a renewal keeps it), so a write made under a
    fence can be checked against the lease row: a holder that stalled while another process took
    the lease over finds its generation stale, and its late writes are refused (`LeaseLost`)."""

    chat_id: int
    holder: str
    generation: int


@dataclass(frozen=True, slots=True)
class Conversation:
    """Where one conversation happens: a chat, or one topic of a chat with topics (a forum
    supergroup's, or a private chat's with topics turned on). Each conversation has its own
    session, queue, lease, /new and /stop. Inside Palui a conversation is named by one integer,
    its key (`palui.db.topics`): the chat's id for the chat itself, so chats without topics
    are stored as they always were; only the Telegram channel turns a key back into this."""

    chat_id: int
    topic_id: int = 0  # 0: the chat itself (no topics, or a forum's General topic)


_NOT_IN_LABEL = re.compile(r"[^a-zA-Z0-9_-]+")  # what an OpenAI message `name` may not hold


def author_label(user_id: int, username: str | None, first_name: str | None) -> str:
    """The name a group message carries to the model (OpenAI's `name`: a label beside the
    words, never part of them): ^[a-zA-Z0-9_-]{1,64}$, from the username or first name
    (accents dropped), else `user_<id>`."""
    for name in (username, first_name):
        ascii_name = unicodedata.normalize("NFKD", name or "").encode("ascii", "ignore")
        cleaned = _NOT_IN_LABEL.sub("_", ascii_name.decode()).strip("_")[:64]
        if cleaned:
            return cleaned
    return f"user_{user_id}"
