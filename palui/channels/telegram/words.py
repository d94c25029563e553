"""Where a Telegram message was said and whose words are in it.

- `chat_kind`: private, group, supergroup (a type Palui doesn't know counts as a group: the
  stricter reading);
- a group's addressing: whether the person's own words mention this bot (a `mention` entity of
  `@name`, a `text_mention` of the bot, or `@name` in the text or caption) and whether the message
  replies to one of the bot's messages;
- someone else's words (`Foreign`): a forwarded message whose origin is not the sender (the
  forward's text or caption is then not the person's: `text` becomes None) and the text of a
  replied-to message written by someone else. Each is labelled as a card's "why" completes
  "this turn read …".
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from typing import Any

from telegram import (
    Message,
    MessageEntity,
    MessageOriginChannel,
    MessageOriginChat,
    MessageOriginHiddenUser,
    MessageOriginUser,
)

from palui.domain import ChatKind, Foreign, ForeignKind, Inbound

NAME_CHARS = 48  # of a name in a label: a card names the source, it doesn't quote it
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]+")


def chat_kind(chat: Any) -> ChatKind:
    try:
        return ChatKind(chat.type)
    except ValueError:
        return ChatKind.GROUP


def with_words(inbound: Inbound, message: Message, bot_username: str | None) -> Inbound:
    """`inbound` with where it was said, whether it addresses this bot, and the foreign words."""
    bot_id = _bot_id(message)
    forwarded = _forwarded(message)
    replied = _replied(message, bot_id, bot_username)
    found = tuple(item for item in (forwarded, replied) if item is not None)
    return dataclasses.replace(
        inbound,
        text=None if forwarded is not None else inbound.text,
        chat_kind=chat_kind(message.chat),
        # A forward's words are its author's: a mention in them doesn't address Palui.
        mentions_bot=forwarded is None and _mentions(message, bot_username, bot_id),
        replies_to_bot=_replies_to_bot(message, bot_id, bot_username),
        foreign=inbound.foreign + found,
    )


def _bot_id(message: Message) -> int | None:
    with contextlib.suppress(RuntimeError):  # no bot set, or not initialized yet
        return int(message.get_bot().id)
    return None


def _name(raw: str | None) -> str:
    name = " ".join(_UNPRINTABLE.sub(" ", raw or "").split())
    if len(name) > NAME_CHARS:
        name = name[: NAME_CHARS - 1].rstrip() + "…"
    return name or "someone"


def _user_name(user: Any) -> str:
    return _name(user.full_name or (f"@{user.username}" if user.username else None))


def _origin_name(origin: Any) -> str:
    if isinstance(origin, MessageOriginUser):
        return _user_name(origin.sender_user)
    if isinstance(origin, MessageOriginHiddenUser):
        return _name(origin.sender_user_name)
    if isinstance(origin, MessageOriginChat):
        return _name(origin.sender_chat.title or origin.author_signature)
    if isinstance(origin, MessageOriginChannel):
        return _name(origin.chat.title or origin.author_signature)
    return "someone"


def _forwarded(message: Message) -> Foreign | None:
    origin = message.forward_origin
    if origin is None:
        return None
    sender = message.from_user
    if isinstance(origin, MessageOriginUser) and sender and origin.sender_user.id == sender.id:
        return None  # the person's own words, forwarded back
    return Foreign(
        ForeignKind.FORWARD,
        f"a forwarded message from {_origin_name(origin)}",
        message.text or message.caption,
    )


def _in_topic_root(message: Message, replied: Message) -> bool:
    """In a forum topic every message "replies" to the topic's first (service) message."""
    return bool(message.is_topic_message and replied.forum_topic_created)


def _is_this_bot(user: Any, bot_id: int | None, bot_username: str | None) -> bool:
    if bot_id is not None:
        return bool(user.id == bot_id)
    return bool(
        user.is_bot
        and bot_username
        and user.username
        and user.username.lower() == bot_username.lower()
    )


def _replied(message: Message, bot_id: int | None, bot_username: str | None) -> Foreign | None:
    replied = message.reply_to_message
    if replied is None:
        external, quote = message.external_reply, message.quote
        if external is None or quote is None or not quote.text:
            return None
        label = f"a message from {_origin_name(external.origin)} you replied to"
        return Foreign(ForeignKind.REPLY, label, quote.text)
    if _in_topic_root(message, replied):
        return None
    author = replied.from_user
    sender = message.from_user
    if author is not None and (
        (sender is not None and author.id == sender.id)
        or _is_this_bot(author, bot_id, bot_username)
    ):
        return None  # the person's own words, or Palui's (already in the history)
    words = replied.text or replied.caption
    if not words:
        return None
    if author is not None:
        name = _user_name(author)
    else:
        name = _name(replied.sender_chat.title if replied.sender_chat else None)
    return Foreign(ForeignKind.REPLY, f"a message from {name} you replied to", words)


def _replies_to_bot(message: Message, bot_id: int | None, bot_username: str | None) -> bool:
    replied = message.reply_to_message
    if replied is None or replied.from_user is None or _in_topic_root(message, replied):
        return False
    return _is_this_bot(replied.from_user, bot_id, bot_username)


_MENTIONS: list[str | None] = [MessageEntity.MENTION, MessageEntity.TEXT_MENTION]


def _mentions(message: Message, bot_username: str | None, bot_id: int | None) -> bool:
    found: dict[MessageEntity, str] = {}
    if message.text is not None:
        found.update(message.parse_entities(_MENTIONS))
    if message.caption is not None:
        found.update(message.parse_caption_entities(_MENTIONS))
    for entity, text in found.items():
        if entity.type == MessageEntity.MENTION and bot_username:
            if text.removeprefix("@").lower() == bot_username.lower():
                return True
        elif entity.user is not None and _is_this_bot(entity.user, bot_id, bot_username):
            return True
    words = message.text or message.caption or ""
    if not bot_username:
        return False
    pattern = rf"(?<![\w@])@{re.escape(bot_username)}(?!\w)"
    return re.search(pattern, words, re.IGNORECASE) is not None
