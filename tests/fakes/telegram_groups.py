"""Group chats, forwards, replies and reactions for the fake Bot API (issue 15).

Builds the updates Telegram sends for them and answers the methods they need:

- a group message: a negative chat id, `chat.type` "group" or "supergroup", `mention` entities
  for every `@name` in the text (Telegram marks them so);
- a forwarded message: `forward_origin` (a user, a hidden user, or a channel);
- a reply: `reply_to_message`, a copy of the message replied to (one the bot sent, or one a
  user sent that the test pushed earlier), without its own `reply_to_message`, as Telegram does;
- `setMessageReaction`: recorded per message; an emoji Telegram doesn't allow as a reaction is
  "REACTION_INVALID", a message that doesn't exist "message to react not found";
- `sendMessage` with `reply_parameters`: the sent message carries `reply_to_message`; a missing
  message is "message to be replied not found" unless `allow_sending_without_reply` is set.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from tests.fakes.telegram_chats import FakeChats, bad_request
from tests.fakes.telegram_entities import utf16_len

__all__ = ["FakeGroups", "mention_entities"]

_MENTION = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{4,32}")
# A few of the emoji Telegram accepts as reactions (enough for the fake to refuse others).
_REACTIONS = frozenset(
    ["👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🎉", "🤩", "🙏", "👌", "👀", "💯"]
)


def mention_entities(text: str) -> list[dict[str, Any]]:
    """The `mention` entities Telegram attaches to every `@username` in a text."""
    return [
        {"type": "mention", "offset": utf16_len(text[: m.start()]), "length": utf16_len(m[0])}
        for m in _MENTION.finditer(text)
    ]


def user(user_id: int, first_name: str | None = None) -> dict[str, Any]:
    return {"id": user_id, "is_bot": False, "first_name": first_name or f"User{user_id}"}


class FakeGroups:
    def __init__(self, chats: FakeChats, pushed: dict[int, dict[str, Any]]) -> None:
        self._chats = chats
        self._pushed = pushed  # every update the test pushed, by update_id
        self.reactions: dict[tuple[int, int], list[dict[str, Any]]] = {}

    def handlers(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {
            "setmessagereaction": self.api_set_message_reaction,
            "sendmessage": self.api_send_message,
        }

    # --- what users do ------------------------------------------------------------------

    def message(
        self,
        chat_id: int,
        user_id: int,
        text: str,
        *,
        chat_type: str | None = None,
        first_name: str | None = None,
        reply_to: int | None = None,
        forward_from: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A user's message: in a group when `chat_id` is negative (`chat_type` "supergroup"
        unless given), replying to message `reply_to` of the chat, forwarded from
        `forward_from` (a `forward_origin`, see `origin_user` / `origin_hidden`)."""
        kind = chat_type or ("private" if chat_id > 0 else "supergroup")
        message = self._chats.user_message(chat_id, user(user_id, first_name), text, kind)
        if mentions := mention_entities(text):
            message["entities"] = [*message.get("entities", []), *mentions]
        if reply_to is not None:
            message["reply_to_message"] = self.find(chat_id, reply_to)
        if forward_from is not None:
            message["forward_origin"] = forward_from
        return message

    @staticmethod
    def origin_user(user_id: int, first_name: str) -> dict[str, Any]:
        return {"type": "user", "date": 1_700_000_000, "sender_user": user(user_id, first_name)}

    @staticmethod
    def origin_hidden(name: str) -> dict[str, Any]:
        return {"type": "hidden_user", "date": 1_700_000_000, "sender_user_name": name}

    def find(self, chat_id: int, message_id: int) -> dict[str, Any]:
        """A message of the chat as a `reply_to_message` shows it: the bot's or a user's."""
        bots = {(m["chat"]["id"], m["message_id"]): m for m in self._chats.sent_messages()}
        found = bots.get((chat_id, message_id))
        if found is None:
            for update in self._pushed.values():
                message = update.get("message") or {}
                if message.get("chat", {}).get("id") == chat_id and (
                    message.get("message_id") == message_id
                ):
                    found = message
        if found is None:
            raise KeyError(f"no message {message_id} in chat {chat_id}")
        found = copy.deepcopy(found)
        found.pop("reply_to_message", None)
        return found

    # --- Bot API ------------------------------------------------------------------------

    def api_set_message_reaction(self, params: dict[str, Any]) -> bool:
        key = (params.get("chat_id"), int(params.get("message_id") or 0))
        if not self._exists(*key):
            raise bad_request("message to react not found")
        reaction = params.get("reaction") or []
        if not isinstance(reaction, list):
            raise bad_request("can't parse reaction types JSON object")
        for item in reaction:
            if item.get("type") == "emoji" and item.get("emoji") not in _REACTIONS:
                raise bad_request("REACTION_INVALID")
        self.reactions[key] = reaction  # type: ignore[index]
        return True

    def api_send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        reply = params.get("reply_parameters")
        target: dict[str, Any] | None = None
        if isinstance(reply, dict) and reply.get("message_id"):
            chat_id = reply.get("chat_id", params.get("chat_id"))
            try:
                target = self.find(chat_id, int(reply["message_id"]))
            except KeyError:
                if not reply.get("allow_sending_without_reply"):
                    raise bad_request("message to be replied not found") from None
        sent = self._chats.api_send_message(params)
        if target is not None:
            sent["reply_to_message"] = target
            self._chats.remember_reply(sent["chat"]["id"], sent["message_id"], target)
        return sent

    def emoji_on(self, chat_id: int, message_id: int) -> list[str]:
        """The emoji the bot set as its reaction on a message (none: [])."""
        return [r.get("emoji", "") for r in self.reactions.get((chat_id, message_id), [])]

    def _exists(self, chat_id: Any, message_id: int) -> bool:
        try:
            self.find(chat_id, message_id)
        except KeyError:
            return False
        return True
