"""Conversation keys: the one integer a conversation is stored under (palui.domain.Conversation).

Every table keyed by chat (sessions, the inbox, turns, the outbox, chat and delivery leases, jobs,
webhook deliveries, approvals) stores a conversation's key in its `chat_id` column. A chat without
topics, and the General topic of a forum, is keyed by its own chat id, so such chats are stored
exactly as before topics existed. A topic is keyed by `TOPIC_KEYS - n`, n its row in `topics`:
below -2**53, where no Telegram chat id can be (they have at most 52 significant bits). So each
topic has its own lease, fence, queue and inbox order with the same one-column lookups as a chat.

A key never changes meaning once given, so each process keeps those it has seen.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select

from palui.db.engine import Database
from palui.db.models import Topic
from palui.db.repo import Repo
from palui.domain import Conversation

TOPIC_KEYS = -(2**53)


def is_topic_key(key: int) -> bool:
    return key <= TOPIC_KEYS


class TopicRepo(Repo):
    """Implements the `ConversationKeys` port (palui.ports)."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._keys: dict[Conversation, int] = {}
        self._conversations: dict[int, Conversation] = {}

    async def key(self, conversation: Conversation) -> int:
        """The conversation's key; a topic seen for the first time is given one."""
        if not conversation.topic_id:
            return conversation.chat_id
        if (known := self._keys.get(conversation)) is not None:
            return known
        where = (Topic.chat_id == conversation.chat_id, Topic.topic_id == conversation.topic_id)
        async with self._db.session() as s, s.begin():
            await s.execute(
                self._insert(Topic)
                .values(chat_id=conversation.chat_id, topic_id=conversation.topic_id)
                .on_conflict_do_nothing(index_elements=["chat_id", "topic_id"])
            )
            row_id = await s.scalar(select(Topic.id).where(*where))
        assert row_id is not None  # inserted or there already, in this transaction
        return self._remember(conversation, TOPIC_KEYS - row_id)

    async def conversation(self, key: int) -> Conversation:
        """The chat (and topic) a key names. LookupError for a topic key never given."""
        if not is_topic_key(key):
            return Conversation(key)
        if (known := self._conversations.get(key)) is not None:
            return known
        async with self._db.session() as s:
            row = (
                await s.execute(
                    select(Topic.chat_id, Topic.topic_id).where(Topic.id == TOPIC_KEYS - key)
                )
            ).first()
        if row is None:
            raise LookupError(f"no topic has the conversation key {key}")
        found = Conversation(row.chat_id, row.topic_id)
        self._remember(found, key)
        return found

    async def has_topics(self, chat_id: int) -> bool:
        """Whether any topic of the chat was ever a conversation here."""
        async with self._db.session() as s:
            found = await s.scalar(select(Topic.id).where(Topic.chat_id == chat_id).limit(1))
            return found is not None

    def known(self, key: int) -> Conversation | None:
        """The conversation of a key this process has seen (no query); a chat's own at once."""
        return self._conversations.get(key) if is_topic_key(key) else Conversation(key)

    async def named(self, keys: Iterable[int]) -> dict[int, Conversation]:
        """The conversations of the topic keys among `keys` (no query when there are none)."""
        ids = [TOPIC_KEYS - key for key in keys if is_topic_key(key)]
        if not ids:
            return {}
        async with self._db.session() as s:
            rows = await s.execute(
                select(Topic.id, Topic.chat_id, Topic.topic_id).where(Topic.id.in_(ids))
            )
            return {TOPIC_KEYS - r.id: Conversation(r.chat_id, r.topic_id) for r in rows}

    def _remember(self, conversation: Conversation, key: int) -> int:
        self._keys[conversation] = key
        self._conversations[key] = conversation
        return key
