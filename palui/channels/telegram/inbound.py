"""Updates from Telegram as channel-neutral `Inbound`s."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Update
from telegram.error import NetworkError, RetryAfter, TelegramError
from telegram.ext import ExtBot

from palui.channels.telegram.attachments import attachment_of, foreign_of
from palui.channels.telegram.link import Abandoned, Link
from palui.channels.telegram.pacing import retry_seconds
from palui.channels.telegram.topics import topic_of
from palui.channels.telegram.words import chat_kind, with_words
from palui.domain import ChatKind, ChatUser, Inbound
from palui.logs import get_logger

log = get_logger("palui.telegram")

ALLOWED_UPDATES = ("message", "edited_message", "callback_query")
# After a failure: a short poll is answered at once (PTB: "within 2 seconds"), so one that is
# not answered by then hangs in the outage.
SHORT_POLL_READ_S = 2.0
POLL_BACKOFF_FIRST_S = 0.5
POLL_BACKOFF_CAP_S = 2.0


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
    bot: ExtBot[None],
    timeout_s: int,
    take: Callable[[Update], Awaitable[None]],
    link: Link | None = None,
) -> None:
    """Long polling through an inbox: `take` stores each update, and only then may the next
    getUpdates confirm it (its offset moves past it). Failures keep the offset.

    After a failure the poll is short (`timeout=0`, given up after `SHORT_POLL_READ_S`) until
    one is answered, then long again: a long poll sent into an outage would hang until its
    read timeout (its own 25 s plus 10) and hold every message sent meanwhile. `link` gives up a
    long poll in flight when a send finds Telegram failing, and a poll hung in an outage once a
    send finds it answering again. Between failures the poll waits 0.5, 1, 2, 2... s (capped low:
    a failed poll costs Telegram nothing; counted from the failed poll's start, so a poll that
    hung is not followed by a wait), or less when a send finds Telegram answering again; a
    429's `retry_after` is waited out exactly. One getUpdates at a time: Telegram refuses a
    second with 409 (a poll given up is closed before the next goes out)."""
    link = link or Link()
    offset: int | None = None
    backoff = POLL_BACKOFF_FIRST_S
    failing = False
    loop = asyncio.get_running_loop()
    while True:
        short = failing or link.down
        began = loop.time()
        # A long poll's read timeout is the request's own plus `timeout_s` (PTB adds it).
        waits: dict[str, Any] = (
            {"timeout": 0, "read_timeout": SHORT_POLL_READ_S} if short else {"timeout": timeout_s}
        )
        try:
            async with link.flight(long_poll=not short):
                updates = await bot.get_updates(
                    offset=offset, allowed_updates=list(ALLOWED_UPDATES), **waits
                )
        except Abandoned:
            failing = True  # a hung poll, found out by a send (`Link`): short until answered
            continue
        except RetryAfter as exc:
            failing = True
            await asyncio.sleep(retry_seconds(exc))
            continue
        except (TelegramError, OSError) as exc:
            if isinstance(exc, NetworkError | OSError):
                link.failed()
            failing = True
            # Polls start `backoff` apart: one that hung until its read timeout waited already.
            delay = max(0.0, backoff - (loop.time() - began))
            log.warning("poll_failed", error=str(exc), retry_in_s=round(delay, 1))
            await link.back_or(delay)
            backoff = min(backoff * 2, POLL_BACKOFF_CAP_S)
            continue
        link.answered()
        failing = False
        try:
            for update in updates:
                await take(update)
                offset = update.update_id + 1  # stored: the next getUpdates confirms it
            backoff = POLL_BACKOFF_FIRST_S
        except Exception:
            # e.g. the database is down: keep the offset, the update comes back later.
            log.exception("update_not_stored", retry_in_s=backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, POLL_BACKOFF_CAP_S)
