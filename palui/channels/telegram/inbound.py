"""Updates from Telegram as channel-neutral `Inbound`s."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Update
from telegram.error import RetryAfter, TelegramError
from telegram.ext import ExtBot

from palui.channels.telegram.attachments import attachment_of, foreign_of
from palui.channels.telegram.pacing import retry_seconds
from palui.channels.telegram.topics import topic_of
from palui.channels.telegram.words import chat_kind, with_words
from palui.domain import ChatKind, ChatUser, Inbound
from palui.logs import get_logger

log = get_logger("palui.telegram")

ALLOWED_UPDATES = ("message", "edited_message", "callback_query")


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


async def poll(
    bot: ExtBot[None], timeout_s: int, take: Callable[[Update], Awaitable[None]]
) -> None:
    """Long polling through an inbox: `take` stores each update, and only then may the next
    getUpdates confirm it (its offset moves past it). Failures back off and keep the offset."""
    offset: int | None = None
    backoff = 1.0
    while True:
        try:
            updates = await bot.get_updates(
                offset=offset, timeout=timeout_s, allowed_updates=list(ALLOWED_UPDATES)
            )
            for update in updates:
                await take(update)
                offset = update.update_id + 1  # stored: the next getUpdates confirms it
            backoff = 1.0
        except RetryAfter as exc:
            await asyncio.sleep(retry_seconds(exc))
        except (TelegramError, OSError) as exc:
            log.warning("poll_failed", error=str(exc), retry_in_s=backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 60)
        except Exception:
            # e.g. the database is down: keep the offset, the update comes back later.
            log.exception("update_not_stored", retry_in_s=backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 60)
