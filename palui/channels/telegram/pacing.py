"""One Bot API request that sends, within Telegram's rates: 429s waited out (the chat paused for
as long as Telegram asks), network errors retried a few times (sooner when Telegram answers
again, `link.py`), a bot that may not write to the chat (blocked, removed) a permanent failure."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut

from palui.channels.ratelimit import SendRateLimiter
from palui.channels.telegram.link import Abandoned, Link
from palui.errors import ChannelError, PermanentChannelError
from palui.logs import get_logger
from palui.observe import Metrics

log = get_logger("palui.telegram")

MAX_SEND_ATTEMPTS = 5


def retry_seconds(exc: RetryAfter) -> float:
    value = exc.retry_after  # a timedelta with PTB_TIMEDELTA=1 (set by the CLI), else seconds
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


async def paced(
    limiter: SendRateLimiter,
    chat_id: int,
    method: Any,
    *args: Any,
    again_on_timeout: bool = True,
    metrics: Metrics | None = None,
    link: Link | None = None,
) -> Any:
    """`method(*args)` within the chat's and the bot's send rates.

    `again_on_timeout=False` for a reply's part: a request that timed out or lost its
    connection may have reached the chat, and the outbox, told so by the error, looks for the
    part before sending it again (`palui.delivery.outbox`) instead of this sending it blindly,
    which would show it twice.

    `link`: what this request finds (Telegram failing or answering) moves the poller and the
    other sends (`palui.channels.telegram.link`); a request sent into an outage is given up
    soon after Telegram answers again, and a retry waits no longer than that."""
    link = link or Link()
    asked: float | None = None  # the last 429's retry_after
    for attempt in range(1, MAX_SEND_ATTEMPTS + 1):
        counted = await limiter.acquire(chat_id)
        try:
            async with link.flight():
                result = await method(*args)
        except RetryAfter as exc:
            asked = retry_seconds(exc)
            log.warning("telegram_flood_wait", chat_id=chat_id, retry_after_s=asked)
            limiter.pause_chat(chat_id, asked)
            if metrics is not None:
                metrics.send_paced()
        except Forbidden as exc:
            link.answered()
            raise PermanentChannelError(f"Telegram refused: {exc.message}") from exc
        except (TimedOut, Abandoned) as exc:
            # The message may have gone out; a repeat is better than a loss, unless the
            # caller can look for it first.
            if isinstance(exc, TimedOut):
                link.failed()
            log.warning("telegram_timed_out", chat_id=chat_id, attempt=attempt)
            if attempt == MAX_SEND_ATTEMPTS or not again_on_timeout:
                raise ChannelError(f"Telegram timed out: {exc}") from exc
            if metrics is not None:
                metrics.send_retried()
        except NetworkError as exc:
            if isinstance(exc, BadRequest):
                link.answered()
                limiter.refused(chat_id, counted)  # e.g. a search's probe: nothing was shown
                raise
            link.failed()
            if attempt == MAX_SEND_ATTEMPTS or not again_on_timeout:
                raise ChannelError(f"Telegram can't be reached: {exc.message}") from exc
            if metrics is not None:
                metrics.send_retried()
            await link.back_or(min(2**attempt, 30))
        else:
            link.answered()
            limiter.answered(chat_id)
            return result
    raise ChannelError("Telegram kept asking to slow down", retry_after_s=asked)
