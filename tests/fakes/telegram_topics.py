"""Topics for the fake Bot API (issue 30): forum supergroups and private chats with topics.

- `forum(chat_id)` makes a supergroup a forum (`chat.is_forum`); `private_topics(chat_id)` turns
  topics on in a private chat; `open_topic` creates a topic as Telegram does: a service message
  `forum_topic_created` whose message id is the topic's `message_thread_id`;
- a person's message in a topic carries `message_thread_id`, `is_topic_message` and, unless it
  replies to something else, `reply_to_message` = the topic's creation message (Telegram's way);
  in the General topic it carries none of them;
- `sendMessage`, `sendChatAction`, `sendMessageDraft` take `message_thread_id`: a thread that is
  not a topic of that chat (a chat without topics, an unknown id, a forum's General topic id 1)
  is "Bad Request: message thread not found", as Telegram answers; a sent message records its
  thread (`message_thread_id`, `is_topic_message`), so a tap on a card names the card's topic.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from tests.fakes.telegram_chats import FakeChats, bad_request
from tests.fakes.telegram_groups import FakeGroups, user

__all__ = ["FakeTopics"]


class FakeTopics:
    def __init__(self, chats: FakeChats, groups: FakeGroups) -> None:
        self._chats = chats
        self._groups = groups
        self._topics: dict[int, dict[int, dict[str, Any]]] = {}  # chat -> thread -> its root
        self.chat_actions: list[tuple[int, int | None, str]] = []  # chat, thread, action
        self.drafts: list[tuple[int, int | None, str]] = []  # chat, thread, text

    def handlers(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {
            "sendmessage": self.api_send_message,
            "sendchataction": self.api_send_chat_action,
        }

    # --- what users do ------------------------------------------------------------------

    def forum(self, chat_id: int) -> None:
        """A forum supergroup. Its first message (id 1) opened it: the General topic, which is
        no topic to send to (thread 1 is "message thread not found")."""
        self._chats.chat_fields(chat_id, "supergroup", {"is_forum": True})
        self._chats.user_message(chat_id, user(1), "", "supergroup")
        self._topics.setdefault(chat_id, {})

    def private_topics(self, chat_id: int) -> None:
        self._chats.chat_fields(chat_id, "private", {})
        self._topics.setdefault(chat_id, {})

    def open_topic(self, chat_id: int, user_id: int, name: str) -> int:
        """A topic created by `user_id`; its thread id."""
        kind = "private" if chat_id > 0 else "supergroup"
        root = self._chats.user_message(chat_id, user(user_id), "", kind)
        root.pop("text", None)
        root.pop("entities", None)
        root["forum_topic_created"] = {"name": name, "icon_color": 7322096}
        root["message_thread_id"] = root["message_id"]
        root["is_topic_message"] = True
        self._topics[chat_id][root["message_id"]] = root
        return int(root["message_id"])

    def in_topic(self, message: dict[str, Any], thread: int) -> dict[str, Any]:
        """A person's message (FakeGroups.message) as said in topic `thread`."""
        chat_id = message["chat"]["id"]
        root = self._topics[chat_id][thread]
        message["message_thread_id"] = thread
        message["is_topic_message"] = True
        message.setdefault("reply_to_message", copy.deepcopy(root))
        return message

    # --- Bot API ------------------------------------------------------------------------

    def api_send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = self._thread(params)
        sent = self._groups.api_send_message(params)
        if thread is not None:
            fields = {"message_thread_id": thread, "is_topic_message": True}
            sent.update(fields)
            self._chats.annotate(sent["chat"]["id"], sent["message_id"], fields)
        return sent

    def api_send_chat_action(self, params: dict[str, Any]) -> bool:
        thread = self._thread(params)
        done = self._chats.api_send_chat_action(params)
        self.chat_actions.append((int(params["chat_id"]), thread, str(params["action"])))
        return done

    def check_draft(self, params: dict[str, Any]) -> None:
        """sendMessageDraft's thread, checked before the draft is shown."""
        thread = self._thread(params)
        self.drafts.append((int(params.get("chat_id") or 0), thread, str(params.get("text"))))

    def _thread(self, params: dict[str, Any]) -> int | None:
        thread = params.get("message_thread_id")
        if thread in (None, ""):
            return None
        topics = self._topics.get(params.get("chat_id"))  # type: ignore[arg-type]
        if not isinstance(thread, int) or topics is None or thread not in topics:
            raise bad_request("message thread not found")
        return thread
