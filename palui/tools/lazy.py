"""What the policy may need about a turn's past, read only when a call needs it.

The person's own words (where a tainted turn may send without a card) matter only to a call of a
tool that sends out; the calls approved a moment ago only to an idempotent write's immediate
retry. Most turns make neither kind of call, so neither is read up front: `CallRunner.prepare`
loads each the first time a call's tool needs it, before the policy decides that call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from palui.policy.classes import Classification
from palui.policy.named import NamedDestinations
from palui.tools.turn_policy import TurnPolicy

Words = Callable[[], Awaitable[Sequence[str]]]
Digests = Callable[[], Awaitable[frozenset[str]]]


@dataclass(slots=True)
class LazyInputs:
    words: Words | None = None  # the person's own words (`palui.turns.words`)
    allowed: Sequence[str] = ()  # `[limits] allowed_destinations`
    digests: Digests | None = None  # calls approved in the idempotent-retry window
    loaded: set[str] = field(default_factory=set)

    async def for_call(self, policy: TurnPolicy, classification: Classification | None) -> None:
        if classification is None:
            return
        if classification.sends_out and self.words is not None and "words" not in self.loaded:
            self.loaded.add("words")
            policy.know(named=NamedDestinations.of(await self.words(), self.allowed))
        retry = classification.idempotent and classification.tool_class == "write"
        if retry and self.digests is not None and "digests" not in self.loaded:
            self.loaded.add("digests")
            policy.know(just_approved=await self.digests())
