"""What people send: where a channel puts it, and who answers what is not a turn."""

from __future__ import annotations

from typing import Protocol

from palui.domain import Conversation, Inbound


class InboundSink(Protocol):
    """Where a channel puts what people send (palui.chat.inbox)."""

    def is_allowed(self, user_id: int) -> bool: ...

    async def accept(self, inbound: Inbound) -> bool:
        """Store the event; once this returns the channel may acknowledge it. False when it was
        not stored (a stranger's, or one already stored)."""
        ...


class ConversationKeys(Protocol):
    """A conversation's key and back (palui.db.topics): the Telegram channel names chats by
    key past its edge, and addresses Telegram with the chat and topic behind it."""

    async def key(self, conversation: Conversation) -> int: ...

    async def conversation(self, key: int) -> Conversation: ...

    async def has_topics(self, chat_id: int) -> bool: ...

    def known(self, key: int) -> Conversation | None:
        """The conversation of a key already seen, without a query."""
        ...


class Interactions(Protocol):
    """What a person taps or types that is not a turn: commands and button taps."""

    async def owns(self, inbound: Inbound, *, asked: bool | None = None) -> bool:
        """Whether the inbound is answered here at once, rather than by the chat's next turn
        (a message may answer a question asked in another process: the database says).
        `asked`: whether a server's question waits for this person's next message here, when
        the caller read it already (None: look it up)."""
        ...

    async def handle(self, inbound: Inbound) -> bool:
        """Answer it and mark it done in the inbox; a reply is left in the outbox for the chat
        layer to send. True when a paused turn of the chat can now resume."""
        ...
