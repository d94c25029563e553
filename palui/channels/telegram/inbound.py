"""Updates from Telegram as channel-neutral `Inbound`s."""

from __future__ import annotations

from typing import Any

from telegram import Update

from palui.channels.telegram.attachments import attachment_of, foreign_of
from palui.channels.telegram.topics import topic_of
from palui.channels.telegram.words import chat_kind, with_words
from palui.domain import ChatKind, ChatUser, Inbound


def to_inbound(update: Update, bot_username: str | None = None) -> Inbound | None:
    """The channel-neutral view of an update; None for updates Palui does not handle.

    An `edited_message` becomes an edited inbound (it runs no command); `bot_username` lets a
    `/cmd@name` count as a command only when `name` is this bot."""
    if update.callback_query is not None:
        query = update.callback_query
        message = query.message
        chat_id = message.chat.id if message is not None else query.from_user.id
        return Inbound(
            update_id=update.update_id,
            chat_id=chat_id,
            user=_user(query.from_user),
            text=None,
            message_id=message.message_id if message is not None else None,
            callback_query_id=query.id,
            callback_data=query.data,
            chat_kind=chat_kind(message.chat) if message is not None else ChatKind.PRIVATE,
            topic_id=topic_of(message),  # a card's tap: the card's topic
        )
    message = update.message or update.edited_message
    if message is None or message.from_user is None:
        return None
    attachment = attachment_of(message)  # a file's message has a caption instead of a text
    inbound = Inbound(
        update_id=update.update_id,
        chat_id=message.chat.id,
        user=_user(message.from_user),
        text=message.text if attachment is None else message.caption,
        message_id=message.message_id,
        edited=update.edited_message is not None,
        received_at=message.date,
        bot_username=bot_username,
        attachment=attachment,
        foreign=foreign_of(attachment),
        topic_id=topic_of(message),
    )
    return with_words(inbound, message, bot_username)  # groups, forwards, replies (words.py)


def _user(user: Any) -> ChatUser:
    return ChatUser(id=user.id, username=user.username, first_name=user.first_name)
