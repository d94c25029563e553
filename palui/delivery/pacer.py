"""The one pacer behind both faces of a streamed answer: the preview edited in place
(`palui.delivery.preview`) and the native draft (`palui.delivery.draft`).

It keeps the answer's text so far and shows it through the face's `show(text)` from a background
task, so `push` never waits for the chat: at most once per `min_interval_s`, always the latest
text (deltas arriving meanwhile make one call, not many), and the first call only
`first_after_s` after the first words, so an answer complete by then goes out once, formatted,
with nothing streamed. A face's `show` returns False to stop for good (its lease lost, a draft
refused); any other failure counts, and `max_failures` in a row stop it (the answer still goes
out). `stop` waits for a call in flight rather than cancelling it: a cancelled request may still
reach the chat after the final answer and overwrite it, or show it twice.

What a preview (or a draft) shows of an answer still being written is `preview_text`'s: plain
text, within one Telegram message.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable

from palui.channels.formatting import TELEGRAM_TEXT_LIMIT, telegram_length, to_plain_text
from palui.logs import get_logger

__all__ = ["MAX_FAILURES", "MIN_INTERVAL_S", "MORE", "REPLACED", "Pacer", "Show", "preview_text"]

log = get_logger("palui.streaming")

MIN_INTERVAL_S = 1.0  # UX: edits at most every ~1 s (and Telegram's ~1 message/s per chat)
MAX_FAILURES = 3  # in a row; then stop streaming and let the answer go out whole

Show = Callable[[str], Awaitable[bool]]
"""`show(text)`: put `text` on screen; False: stop streaming for good."""


class Pacer:
    """When a growing answer is shown, for one answer. `holding()`: whether the first-words
    hold still applies (nothing of this answer shown yet)."""

    def __init__(
        self,
        show: Show,
        holding: Callable[[], bool],
        *,
        name: str,
        min_interval_s: float,
        first_after_s: float,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[object]],
        failed: str,
    ) -> None:
        self._show = show
        self._holding = holding
        self._name = name
        self._failed = failed  # the log event of a failed call
        self._min_interval_s = min_interval_s
        self._first_after_s = first_after_s
        self._clock = clock
        self._sleep = sleep
        self.text = ""  # everything pushed so far
        self.first_delta_at: float | None = None
        self.shown = ""  # what is on screen now
        self.closing = False  # the answer is ending: no more calls
        self.failures = 0
        self._wake = asyncio.Event()  # set when there is newer text to show
        self._worker: asyncio.Task[None] | None = None
        self._in_call = False
        self._last_call_at = -math.inf

    def add(self, delta: str) -> None:
        self.text += delta
        if self.first_delta_at is None:
            self.first_delta_at = self._clock()

    def kick(self) -> None:
        """There is newer text worth showing: show it when the pace allows."""
        if self.failures >= MAX_FAILURES:
            return
        self._wake.set()
        if self._worker is None:
            self._worker = asyncio.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        """No more calls; once this returns none is in flight."""
        self.closing = True
        worker = self._worker
        if worker is None or worker.done():
            return
        if not self._in_call:
            worker.cancel()  # it is only waiting, for a delta or for its turn
        await asyncio.wait([worker])

    async def _run(self) -> None:
        while not self.closing:
            await self._wake.wait()
            wait_s = self._last_call_at + self._min_interval_s - self._clock()
            if self._holding() and self.first_delta_at is not None:
                wait_s = max(wait_s, self.first_delta_at + self._first_after_s - self._clock())
            if wait_s > 0:
                await self._sleep(wait_s)  # deltas arriving meanwhile make one call, not many
            self._wake.clear()
            text = preview_text(self.text)
            if not text or text == self.shown:
                continue
            self._in_call = True
            try:
                if not await self._show(text):
                    return
            except Exception as exc:
                self.failures += 1
                log.warning(self._failed, error=str(exc), failures=self.failures)
                if self.failures >= MAX_FAILURES:
                    return
            else:
                self.failures = 0
                self.shown = text
            finally:
                self._in_call = False
                self._last_call_at = self._clock()


# -- what is shown -------------------------------------------------------------------------

MORE = " …"  # ends a preview that has more text than one message holds
# What a preview shows when no answer will fill it and it could not be deleted (or when the answer
# had to be sent anew, below it).
REPLACED = "(replaced below)"


def preview_text(markdown: str, suffix: str = "", limit: int = TELEGRAM_TEXT_LIMIT) -> str:
    """The plain text to show for `markdown` so far, `suffix` kept whole, within `limit`.

    Too long for one message: the beginning, cut after a word if one is near, and " …". The
    beginning, not the newest end, so what the person is reading does not move away; it is
    what the final answer's first message will show.
    """
    source = markdown[: 8 * limit]  # no Markdown shrinks that much; saves rendering huge text
    plain = to_plain_text(source).strip()
    if not plain:
        return ""
    if len(source) == len(markdown) and _utf16_len(plain + suffix) <= limit:
        return plain + suffix
    head = _fit(plain, limit - _utf16_len(MORE + suffix))
    space = max(head.rfind(" "), head.rfind("\n"))
    if space > len(head) * 3 // 4:
        head = head[:space]
    return _fit(head.rstrip() + MORE + suffix, limit)


_utf16_len = telegram_length


def _fit(text: str, limit: int) -> str:
    """The longest prefix of `text` (give or take one unit) within `limit` UTF-16 units."""
    head = text[: max(limit, 0)]
    while (excess := _utf16_len(head) - limit) > 0:
        head = head[: len(head) - (excess + 1) // 2]  # each character is one or two units
    return head
