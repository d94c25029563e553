"""Topics at the channel's edge: Telegram addresses a topic as a chat plus `message_thread_id`;
past this channel a topic is a conversation of its own, named by its key (palui.db.topics).

A message counts as a topic's only when Telegram marks it `is_topic_message`: a reply in the
General topic of a forum (or in a group without topics) carries a `message_thread_id` too, the
id of the message the reply chain started from, and sending to that id is refused ("message
thread not found"). So the General topic is the chat itself: no thread id, in and out.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from palui.channels.telegram.pacing import PermanentChannelError
from palui.domain import Conversation, Inbound
from palui.ports import ConversationKeys


def topic_of(message: Any) -> int:
    """The topic a message was said in (a forum's, or a private chat's with topics); 0: none."""
    if message is None or not getattr(message, "is_topic_message", False):
        return 0
    return int(message.message_thread_id or 0)


class Addresses:
    """Conversation keys to Telegram's chat and thread, and back. Without `ConversationKeys`
    topics are not told apart: every key is a chat id, a topic's messages are its chat's."""

    def __init__(self, conversations: ConversationKeys | None) -> None:
        self._conversations = conversations

    async def keyed(self, inbound: Inbound) -> Inbound:
        """The inbound as the rest of Palui names it: a topic's by the topic's key."""
        if not inbound.topic_id or self._conversations is None:
            return inbound
        key = await self._conversations.key(Conversation(inbound.chat_id, inbound.topic_id))
        return dataclasses.replace(inbound, chat_id=key)

    async def where(self, key: int) -> Conversation:
        """The chat (and topic) a key names, to address Telegram."""
        if self._conversations is None:
            return Conversation(key)
        try:
            return await self._conversations.conversation(key)
        except LookupError as exc:  # no such topic: nothing can be sent there
            raise PermanentChannelError(str(exc)) from exc

    async def has_topics(self, key: int) -> bool:
        """Whether the conversation's chat has topics. Its message ids are then shared by
        them: a search for an unrecorded message (leftovers.py) edits candidates by id and
        could overwrite another topic's message, so it is not made there (a part may then be
        sent twice: a repeat, never another message changed)."""
        if self._conversations is None:
            return False
        to = await self.where(key)
        return bool(to.topic_id) or await self._conversations.has_topics(to.chat_id)

    def known(self, key: int) -> Conversation | None:
        """As `where`, without a query: None for a topic this process has not seen yet."""
        return Conversation(key) if self._conversations is None else self._conversations.known(key)
