"""What every turn is built from, and how a turn's tools and loop dependencies are put together."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from palui.agent.turn import TurnDeps
from palui.approvals.decisions import Approvals
from palui.db import Store
from palui.db.riders import Riders
from palui.domain import Completion, Fence, Taint, TurnKind
from palui.memory import Memory
from palui.observe import Metrics, Tracing, traced_model
from palui.policy.named import NamedDestinations
from palui.ports import Channel, ChatModel, Fences
from palui.skills import SkillLibrary, skills_prompt
from palui.tools import delegation
from palui.tools.catalog import ToolCatalog
from palui.tools.lazy import LazyInputs, Words
from palui.tools.registry import ToolOffer
from palui.tools.runner import TurnTools
from palui.tools.switchboard import CallGate
from palui.turns.held import TurnCalls
from palui.turns.limits import Limits
from palui.turns.offer import Offers
from palui.turns.outage import ModelOutage
from palui.turns.stand_in import tell_stand_in

IDEMPOTENT_RETRY_WINDOW = timedelta(minutes=2)  # "immediate" retry of a just-approved call


@dataclass(frozen=True, slots=True)
class TurnParts:
    store: Store
    model: ChatModel
    channel: Channel
    catalog: ToolCatalog
    approvals: Approvals
    limits: Limits
    offers: Offers
    now: Callable[[], datetime]
    delivery_lock: Callable[[int], asyncio.Lock]
    memory: Memory | None = None
    gate: CallGate | None = None  # refuses a call whose tool was switched off meanwhile
    fences: Fences | None = None  # the chat leases this process holds (turns run under one)
    skills: SkillLibrary | None = None  # PALUI_SKILLS_DIR's skills, trusted by digest
    metrics: Metrics = field(default_factory=Metrics)
    outage: ModelOutage | None = None  # chat turns wait for a model that stopped answering
    tracing: Tracing = field(default_factory=Tracing)

    async def skills_prompt(self, message: str) -> str:
        """The trusted skills' names and descriptions for a turn's system message, the most
        relevant to `message` first ("" when none is trusted). Looking also tells the people,
        once, about a trusted skill whose folder changed."""
        if self.skills is None:
            return ""
        await self.skills.look()
        return skills_prompt(self.skills.offered(), message)

    async def tools(
        self,
        offer: ToolOffer,
        turn_id: str,
        chat_id: int,
        kind: TurnKind,
        taint: Taint | None,
        words: Sequence[str] | Words = (),
        fence: Fence | None = None,
        *,
        riders: Riders | None = None,
        resumed: bool = False,
    ) -> TurnTools:
        """The turn's tools; `words` are the person's own (`palui.turns.words`), or how to read
        them: once tainted, the turn sends out without a card only to what they name or the
        operator allows. Read lazily with the recent approvals, when a call needs them. Its
        ledger claims, their settling and its call records are written under `fence`, the chat
        lease the turn runs under."""
        allowed = self.limits.allowed_destinations
        since = self.now() - IDEMPOTENT_RETRY_WINDOW

        async def digests() -> frozenset[str]:
            return frozenset(await self.store.approvals.recent_executed_digests(chat_id, since))

        if callable(words):
            lazy = LazyInputs(words, allowed, digests)
            named = None
        else:
            lazy = LazyInputs(None, allowed, digests)
            named = NamedDestinations.of(words, allowed)
        return TurnTools(
            offer,
            self.store.tool_calls.fenced(fence),
            turn_id,
            kind=kind,
            catalog=self.catalog,
            taint=taint,
            result_limit=self.limits.tool_result_chars,
            ledger=self.store.actions.fenced(fence),
            chat_id=chat_id,
            rules=self.limits.tool_rules,
            notify=self.store.outbox.add,
            now=self.now,
            named=named,
            resumed=resumed,
            riders=riders,
            lazy=lazy,
            metrics=self.metrics,
        )

    def deps(
        self, turn_id: str, chat_id: int, tools: TurnTools, fence: Fence | None = None
    ) -> TurnDeps:
        async def record_usage(completion: Completion, latency_s: float) -> None:
            # Written with the turn's next transaction: a call's record, or the turn's end.
            tools.riders.model_call(turn_id, chat_id, completion, latency_s)
            if completion.stood_in is not None:
                await tell_stand_in(self.store, chat_id, completion.stood_in, self.now())
            usage = completion.usage
            self.metrics.model_called(
                completion.model, "ok", usage.prompt_tokens, usage.completion_tokens
            )

        return TurnDeps(
            model=traced_model(self.model, self.tracing),
            record_usage=record_usage,
            max_steps=self.limits.max_steps,
            timeout_s=self.limits.turn_timeout_s,
            tools=tools.offer.specs,
            offered=lambda: tools.offer.specs,
            runner=TurnCalls(tools, self.approvals, self.gate, fence, self.fences, self.tracing),
            delegate=delegation.NAME if delegation.NAME in tools.offer.tools else None,
        )
