"""Native drafts (`sendMessageDraft`, Bot API 9.5+) for `TelegramChannel.stream_faces`.

Telegram drafts only in private chats (a positive chat id). When it refuses anyway, the refusal
is remembered so later answers go straight to the edited preview: bot-wide when the Bot API does
not know the method (an older or self-hosted server), else for that chat, among at most
`MAX_REFUSED_CHATS` (the oldest forgotten first: at worst one refused draft again).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

from telegram import Bot
from telegram.error import (
    BadRequest,
    EndPointNotFound,
    Forbidden,
    InvalidToken,
    RetryAfter,
    TelegramError,
)

from palui.channels.ratelimit import SendRateLimiter
from palui.errors import ChannelError, DraftRefused
from palui.logs import get_logger
from palui.ports.streaming import SendDraft

__all__ = ["Drafts"]

log = get_logger("palui.telegram")

MAX_REFUSED_CHATS = 1024


class Drafts:
    """Which chats get drafts, and the `send_draft` each answer's `DraftReply` is given
    (`palui.delivery.draft` paces it)."""

    def __init__(self, bot: Bot, limiter: SendRateLimiter, *, enabled: bool) -> None:
        self._bot = bot
        self._limiter = limiter
        self._enabled = enabled
        self._refused: OrderedDict[int, None] = OrderedDict()
        self._ids = itertools.count(1)  # draft_id must be non-zero; one per answer

    def sender(self, chat_id: int, topic_id: int = 0) -> SendDraft | None:
        """One answer's `send_draft` in a private chat that may draft, else None (edits)."""
        if not self._enabled or chat_id <= 0 or chat_id in self._refused:
            return None
        draft_id = next(self._ids)

        async def send_draft(text: str) -> None:
            await self._send(chat_id, draft_id, text, topic_id)

        return send_draft

    async def _send(self, chat_id: int, draft_id: int, text: str, topic_id: int) -> None:
        # No message slot is taken: a draft is not a message, and the answer must not wait on it.
        try:
            await self._bot.send_message_draft(
                chat_id, draft_id, text, message_thread_id=topic_id or None
            )
        except (EndPointNotFound, InvalidToken) as exc:  # 404: this Bot API has no drafts
            self._enabled = False
            log.warning("drafts_unsupported", error=exc.message)
            raise DraftRefused(exc.message) from exc
        except (BadRequest, Forbidden) as exc:
            self._refuse(chat_id)
            raise DraftRefused(exc.message) from exc
        except RetryAfter as exc:
            value = exc.retry_after
            seconds = value if isinstance(value, int | float) else value.total_seconds()
            self._limiter.pause_chat(chat_id, float(seconds))  # Telegram asked this chat to wait
            raise ChannelError(f"draft flood wait {seconds} s") from exc
        except TelegramError as exc:
            raise ChannelError(f"draft not shown: {exc.message}") from exc

    def _refuse(self, chat_id: int) -> None:
        self._refused[chat_id] = None
        self._refused.move_to_end(chat_id)
        while len(self._refused) > MAX_REFUSED_CHATS:
            self._refused.popitem(last=False)
