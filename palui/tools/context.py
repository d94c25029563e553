"""What one turn's tool calls need, fixed when the turn starts: whose turn it is, how it began
(kind, taint), what the policy decides by, and where calls are recorded, claimed and told.

It is frozen: what changes during a turn (the taint its calls add, the calls in flight, the
tools it found) is the runner's own (`palui.tools.runner.CallRunner`), read through its methods.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from palui.db.riders import Riders
from palui.domain import Taint, TurnKind
from palui.observe import Metrics
from palui.policy.named import NamedDestinations
from palui.ports import Ledger
from palui.tools.catalog import ToolCatalog
from palui.tools.lazy import LazyInputs
from palui.tools.record import CallStore
from palui.tools.rules import Notify, ToolRules


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _no_catalog() -> ToolCatalog:
    return ToolCatalog(None, {}, {})  # every tool by its marks alone


@dataclass(frozen=True, slots=True)
class PolicyInputs:
    """What the policy, the hooks and the guards decide a call by (DESIGN §1.4, §1.6)."""

    catalog: ToolCatalog = field(default_factory=_no_catalog)
    rules: ToolRules = field(default_factory=ToolRules)  # hooks, guards, the daily send cap
    # The destinations the person named (a tainted turn sends elsewhere only after a card).
    named: NamedDestinations | None = None
    # Digests of calls approved moments ago: an idempotent write may repeat without a card.
    just_approved: frozenset[str] = frozenset()
    lazy: LazyInputs | None = None  # the person's words, recent approvals: read when needed


@dataclass(frozen=True, slots=True)
class CallPorts:
    """Where a turn's calls are recorded, claimed and told, and its clocks."""

    store: CallStore | None = None  # the call records (under the turn's fence)
    ledger: Ledger | None = None  # world-changing calls are claimed before they go out
    notify: Notify | None = None  # tells the chat (e.g. the send cap reached)
    # What the turn owes the database besides (token usage...): its next write carries it.
    riders: Riders = field(default_factory=Riders)
    metrics: Metrics | None = None
    clock: Callable[[], float] = time.monotonic  # how long a call took
    now: Callable[[], datetime] = _utcnow  # the send cap's day


@dataclass(frozen=True, slots=True)
class CallContext:
    """One turn's tool calls: who, how it began, by what they are decided, where they go."""

    turn_id: str
    chat_id: int = 0
    kind: TurnKind = TurnKind.CHAT
    taint: Taint | None = None  # at the turn's start; the runner adds what its calls read
    resumed: bool = False  # a resumed turn's calls may have records already
    result_limit: int = 16_000  # characters of a result the model gets
    policy: PolicyInputs = field(default_factory=PolicyInputs)
    ports: CallPorts = field(default_factory=CallPorts)
