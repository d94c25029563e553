"""Palui's metrics: what `GET /metrics` shows, in Prometheus's text format (DESIGN §1.13).

One `Metrics` per process, built by the composition root and handed to the parts where each
event happens (a turn's end, a model call, a tool call's decision, a send paced by Telegram, a
lease taken over, …): each is counted there, never by scanning the database on a scrape. Its
registry is its own, not prometheus-client's global one, so two apps in one process (the tests)
count apart. Gauges of what waits are this process's view: the outbox rows it could not send
yet, the inbox rows its workers last saw waiting, the cards it opened minus those settled here
(summed over the processes of one database, the whole).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

# Seconds: a quick answer is ~1 s, a turn with tools tens of seconds, one waiting on a hung
# server minutes.
LATENCY_BUCKETS = (0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock  # wall seconds: ages of stored rows
        self.registry = r = CollectorRegistry()
        self._turns = Counter(
            "palui_turns", "Turns ended, by kind and outcome.", ["kind", "outcome"], registry=r
        )
        self._turn_seconds = Histogram(
            "palui_turn_seconds",
            "A turn's run, start to end.",
            ["kind"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self._first_answer = Histogram(
            "palui_first_answer_seconds",
            "From a person's message (as Telegram dated it) to its answer sent.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self._model_calls = Counter(
            "palui_model_calls",
            "Model calls, by model and outcome.",
            ["model", "outcome"],
            registry=r,
        )
        self._tokens = Counter(
            "palui_model_tokens",
            "Tokens, by model and direction (prompt, completion).",
            ["model", "direction"],
            registry=r,
        )
        self._tool_calls = Counter(
            "palui_tool_calls",
            "Tool calls, by class and decision.",
            ["tool_class", "decision"],
            registry=r,
        )
        self._cards = Gauge(
            "palui_cards_waiting",
            "Approval cards opened here and not yet settled here.",
            registry=r,
        )
        self._outbox_waiting: dict[int, tuple[int, datetime | None]] = {}
        Gauge(
            "palui_outbox_waiting", "Replies this process could not send yet.", registry=r
        ).set_function(lambda: sum(n for n, _ in self._outbox_waiting.values()))
        Gauge(
            "palui_outbox_oldest_seconds",
            "Age of the oldest reply this process could not send.",
            registry=r,
        ).set_function(self._oldest_reply_s)
        self._inbox_waiting: dict[int, int] = {}
        Gauge(
            "palui_inbox_waiting",
            "Messages this process's workers last saw waiting.",
            registry=r,
        ).set_function(lambda: sum(self._inbox_waiting.values()))
        self._takeovers = Counter(
            "palui_lease_takeovers",
            "Chats taken over from a process that stopped.",
            ["lease"],
            registry=r,
        )
        self._refused = Counter(
            "palui_stale_writes_refused",
            "Writes refused: their lease was taken over.",
            ["lease"],
            registry=r,
        )
        self._caps = Counter("palui_caps_hit", "Caps hit, by cap.", ["cap"], registry=r)
        self._connectors = Gauge(
            "palui_connector_state",
            "1 for each connector's current state.",
            ["connector", "state"],
            registry=r,
        )
        self._connector_states: dict[str, str] = {}
        self._connector_source: Callable[[], Iterable[tuple[str, str]]] = tuple
        self._sends = Counter(
            "palui_sends",
            "Telegram sends paced (429) or retried (timeouts, network).",
            ["what"],
            registry=r,
        )

    def follow_connectors(self, states: Callable[[], Iterable[tuple[str, str]]]) -> None:
        """Where each connector's state is read from (memory, at each scrape)."""
        self._connector_source = states

    def render(self) -> bytes:
        for connector, state in self._connector_source():
            self.connector_state(connector, state)
        return generate_latest(self.registry)

    def turn_ended(self, kind: str, outcome: str, seconds: float) -> None:
        self._turns.labels(kind, outcome).inc()
        self._turn_seconds.labels(kind).observe(seconds)

    def answered(self, seconds: float) -> None:
        self._first_answer.observe(max(seconds, 0.0))

    def model_called(self, model: str, outcome: str, prompt: int = 0, completion: int = 0) -> None:
        self._model_calls.labels(model, outcome).inc()
        if prompt:
            self._tokens.labels(model, "prompt").inc(prompt)
        if completion:
            self._tokens.labels(model, "completion").inc(completion)

    def tool_called(self, tool_class: str, decision: str) -> None:
        self._tool_calls.labels(tool_class, decision).inc()

    def cards_opened(self, count: int) -> None:
        self._cards.inc(count)

    def card_settled(self) -> None:
        self._cards.dec()

    def outbox_waits(self, chat_id: int, count: int, oldest: datetime | None) -> None:
        """The chat's replies this process could not send (0: none now)."""
        if count:
            self._outbox_waiting[chat_id] = (count, oldest)
        else:
            self._outbox_waiting.pop(chat_id, None)

    def inbox_waits(self, chat_id: int, count: int) -> None:
        if count:
            self._inbox_waiting[chat_id] = count
        else:
            self._inbox_waiting.pop(chat_id, None)

    def lease_taken_over(self, lease: str) -> None:
        self._takeovers.labels(lease).inc()

    def stale_write_refused(self, lease: str) -> None:
        self._refused.labels(lease).inc()

    def cap_hit(self, cap: str) -> None:
        self._caps.labels(cap).inc()

    def connector_state(self, connector: str, state: str) -> None:
        before = self._connector_states.get(connector)
        if before == state:
            return
        if before is not None:
            self._connectors.labels(connector, before).set(0)
        self._connectors.labels(connector, state).set(1)
        self._connector_states[connector] = state

    def send_paced(self) -> None:
        self._sends.labels("paced").inc()

    def send_retried(self) -> None:
        self._sends.labels("retried").inc()

    def _oldest_reply_s(self) -> float:
        times = [at.timestamp() for _, at in self._outbox_waiting.values() if at is not None]
        return max(self._clock() - min(times), 0.0) if times else 0.0
