"""Telegram's send limits, kept by the fake Bot API when asked (`FakeTelegram.keep_limits()`):
a bot that sends faster than ~1 message per second to a chat, 20 per minute to a group, or 30 per
second overall gets 429 with `retry_after`, as from Telegram. Messages count (sendMessage and
edits of a message's text or buttons); chat actions and drafts do not.

Telegram tolerates short bursts; the fake does not, save the jitter between a sender's clock and
a request's arrival (`slack_s`): a benchmark whose two sides both pass here both kept the limits.
"""

from __future__ import annotations

import math
from collections import deque

__all__ = ["COUNTED", "TelegramLimits"]

COUNTED = frozenset({"sendmessage", "editmessagetext", "editmessagereplymarkup"})


class TelegramLimits:
    def __init__(
        self,
        *,
        per_chat_interval: float = 1.0,
        group_per_minute: int = 20,
        global_per_second: int = 30,
        slack_s: float = 0.2,
    ) -> None:
        self.per_chat_interval = per_chat_interval
        self.group_per_minute = group_per_minute
        self.global_per_second = global_per_second
        self.slack_s = slack_s
        self._last: dict[int, float] = {}
        self._groups: dict[int, deque[float]] = {}
        self._recent: deque[float] = deque(maxlen=global_per_second)

    def retry_after(self, method: str, chat_id: object, now: float) -> int | None:
        """None when this request may go through (and it is counted), else the seconds to wait."""
        if method not in COUNTED or not isinstance(chat_id, int):
            return None
        ready = self._last.get(chat_id, -math.inf) + self.per_chat_interval - self.slack_s
        group = self._groups.setdefault(chat_id, deque(maxlen=self.group_per_minute))
        if chat_id < 0 and len(group) == group.maxlen:
            ready = max(ready, group[0] + 60.0 - self.slack_s)
        if len(self._recent) == self._recent.maxlen:
            ready = max(ready, self._recent[0] + 1.0 - self.slack_s)
        if ready > now:
            return max(1, math.ceil(ready - now))
        self._last[chat_id] = now
        if chat_id < 0:
            group.append(now)
        self._recent.append(now)
        return None
