"""How long a connector waits before it tries to reconnect."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential: `initial_s`, doubling (by `factor`) up to `max_s`. Tests pass tiny values."""

    initial_s: float = 1.0
    factor: float = 2.0
    max_s: float = 60.0

    def delay(self, failures: int) -> float:
        """The wait after `failures` consecutive failures (1 = the first)."""
        return min(self.max_s, self.initial_s * self.factor ** max(0, failures - 1))


DEFAULT_BACKOFF = Backoff()  # 1 s doubling to 60 s
