"""Who is looking: set by the access middleware on every signed-in request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from aiohttp import web

from palui.domain import Conversation


@dataclass(frozen=True, slots=True)
class Viewer:
    user_id: int
    chat_ids: frozenset[int]  # the chats this person may see and decide in
    csrf: str  # the session's token: every form posts it back
    display: str = ""  # "@ana": how a decision names the person
    # The chat and topic behind each topic's key among `chat_ids` (palui.db.topics).
    topics: Mapping[int, Conversation] = field(default_factory=dict)

    def chat_name(self, key: int) -> str:
        """How a page names a conversation: its chat, and its topic if it is one."""
        topic = self.topics.get(key)
        return f"{topic.chat_id} · topic {topic.topic_id}" if topic else str(key)


def viewer_of(request: web.Request) -> Viewer:
    viewer = request["viewer"]
    assert isinstance(viewer, Viewer)
    return viewer
