"""Telegram failing as it does in an outage: the fake Bot API's fault switch.

    outage = fake.fail()  # every request fails from now on, whatever its method
    ...
    outage.end()  # and is carried out again from here

While an outage lasts, each method's requests fail in turn (502, hang, 429, 502, ...), none
carried out:
- 502 Bad Gateway with an HTML body, what Telegram's front end answers when the Bot API behind
  it is down (PTB: NetworkError);
- a hang: no answer until the client gives up (its read timeout; PTB: TimedOut) or `hang_s`
  passes, then 504 Gateway Timeout;
- 429 Too Many Requests with `parameters.retry_after` (PTB: RetryAfter).
A request that hangs is never carried out, even if it is still hanging when the outage ends:
the front end never reached the Bot API.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

from aiohttp import web

from tests.fakes.telegram_chats import ApiError

__all__ = ["Failure", "TelegramOutage"]


class Failure(StrEnum):
    BAD_GATEWAY = "502"
    HANG = "hang"
    FLOOD = "429"


_TURN = (Failure.BAD_GATEWAY, Failure.HANG, Failure.FLOOD)

_BAD_GATEWAY_HTML = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)


@dataclass
class TelegramOutage:
    """One outage; `failures` counts what each method was answered with while it lasted."""

    retry_after: int = 2
    hang_s: float = 120.0
    failures: Counter[tuple[str, Failure]] = field(default_factory=Counter)
    active: bool = True

    def end(self) -> None:
        self.active = False

    def summary(self) -> str:
        """What each method was answered with, as `getupdates 502x1 hangx1`."""
        methods = sorted({name for name, _ in self.failures})
        return "; ".join(
            f"{name} " + " ".join(f"{f}x{n}" for (m, f), n in self.failures.items() if m == name)
            for name in methods
        )

    async def answer(self, method: str) -> web.Response:
        """The failure for this request (the next in turn), once it is due."""
        method = method.lower()
        answered = sum(n for (name, _), n in self.failures.items() if name == method)
        failure = _TURN[answered % len(_TURN)]
        self.failures[(method, failure)] += 1
        if failure is Failure.BAD_GATEWAY:
            return web.Response(status=502, text=_BAD_GATEWAY_HTML, content_type="text/html")
        if failure is Failure.FLOOD:
            wait = self.retry_after
            raise ApiError(429, f"Too Many Requests: retry after {wait}", retry_after=wait)
        # Cancelled when the client disconnects (the server cancels its handlers).
        await asyncio.sleep(self.hang_s)
        return web.Response(status=504, text="504 Gateway Time-out", content_type="text/html")
