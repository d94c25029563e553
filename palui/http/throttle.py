"""Failed authentications, throttled per client address and per endpoint (DESIGN §1.11).

Only failures count, and only failures are held back: a right secret is let in whatever its
address did before, so guesses from behind the same reverse proxy (or the same NAT) can never
lock Telegram or a webhook's sender out. After `limit` failures from one address on one endpoint
(a webhook, Telegram's, the console's sign-in) within `window_s`, that address's next failures
there are answered 429 instead of 401, with no log line each, until the oldest of those failures
leaves the window. What stops a guesser is the secrets' length (at least 16 characters, sign-in
tokens 192 random bits); the throttle keeps a flood of guesses from flooding the log and tells
a misconfigured sender to slow down.

Kept in memory, per process. Memory is bounded: each key keeps at most `limit` timestamps, keys
whose failures have all left the window are dropped, and past `max_keys` the key that failed
least recently is forgotten.

The address is the client's as `palui.http.clients` reads it: the TCP peer, or behind a trusted
reverse proxy (PALUI_HTTP_TRUSTED_PROXIES) the address it forwarded for. An IPv6 address counts
by its /64, the block one host usually holds.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

MAX_FAILURES = 10
WINDOW_S = 60.0
MAX_KEYS = 4096

Key = tuple[str, str]  # (endpoint, remote address)


def remote_key(peer: str | None) -> str:
    """Whom failures are counted against: the peer's address (an IPv6 one by its /64)."""
    if not peer:
        return "unknown"
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return peer
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{address}/64", strict=False))
    return str(address)


class FailureThrottle:
    def __init__(
        self,
        *,
        limit: int = MAX_FAILURES,
        window_s: float = WINDOW_S,
        max_keys: int = MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limit = limit
        self._window_s = window_s
        self._max_keys = max_keys
        self._clock = clock
        self._failures: OrderedDict[Key, deque[float]] = OrderedDict()  # least recent first

    @property
    def tracked(self) -> int:
        """How many (endpoint, address) keys are remembered (old ones are dropped first)."""
        self._expire(self._clock())
        return len(self._failures)

    def retry_after(self, endpoint: str, peer: str | None) -> int | None:
        """Seconds the address must wait before trying this endpoint again, or None."""
        now = self._clock()
        self._expire(now)
        failures = self._failures.get((endpoint, remote_key(peer)))
        if failures is None or len(failures) < self._limit:
            return None
        wait = failures[0] + self._window_s - now  # until the oldest of them leaves the window
        return max(1, math.ceil(wait)) if wait > 0 else None

    def failed(self, endpoint: str, peer: str | None) -> bool:
        """Count one failure; True when it is the one that starts the throttle."""
        now = self._clock()
        self._expire(now)
        key = (endpoint, remote_key(peer))
        failures = self._failures.pop(key, None)
        if failures is None:
            failures = deque(maxlen=self._limit)
            while len(self._failures) >= self._max_keys:
                self._failures.popitem(last=False)
        before = len(failures)
        failures.append(now)
        self._failures[key] = failures  # now the most recent
        return before == self._limit - 1

    def _expire(self, now: float) -> None:
        """Drop the keys whose newest failure has left the window (they sit at the front)."""
        while self._failures:
            key, failures = next(iter(self._failures.items()))
            if failures[-1] > now - self._window_s:
                return
            del self._failures[key]
