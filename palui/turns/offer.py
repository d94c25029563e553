"""Which tools a turn is offered: switched on, its connector not paused, allowed by the policy
matrix for the turn's kind and taint, ranked by what was said, at most `max_tools`. The
switches are brought in step with the database first (`Switchboard.sync_once`: the version the
chat worker's look read just before, else one small query; a reload only when another change
was committed), so a tap in any process counts from here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from palui.domain import Message, RemoteTool, Role, TurnKind
from palui.policy.matrix import Decision, decide
from palui.tools.catalog import ToolCatalog
from palui.tools.ranking import Query
from palui.tools.registry import ToolOffer, ToolRegistry, Wanted
from palui.tools.switchboard import Switchboard
from palui.turns.limits import Limits

SCHEDULE_JOB = "palui__schedule_job"


@dataclass(frozen=True, slots=True)
class CatalogSize:
    """How many tools a person's chat turn may be offered, and how many it is."""

    enabled: int  # switched on, connector running, allowed in a chat turn
    offered: int  # what one turn is offered (the search among them, when some are left out)
    max_tools: int

    @property
    def past_budget(self) -> bool:
        return self.enabled > self.max_tools

    def line(self) -> str:
        if not self.past_budget:
            return (
                f"Tools: {self.enabled} enabled, all offered to each turn (limit {self.max_tools})"
            )
        return (
            f"Tools: {self.enabled} enabled, {self.offered} offered to each turn (limit "
            f"{self.max_tools}): the most relevant to what you ask; the model can search the rest"
        )


@dataclass(frozen=True, slots=True)
class Offers:
    registry: ToolRegistry
    catalog: ToolCatalog
    limits: Limits
    is_paused: Callable[[str], bool]
    board: Switchboard | None = None  # None: switches from this process alone (tests)

    def _allow(self, kind: TurnKind, tainted: bool) -> Callable[[str, RemoteTool], bool]:
        def allow(connector_id: str, remote: RemoteTool) -> bool:
            if self.is_paused(connector_id):
                return False
            entry = self.catalog.entry(connector_id, remote)
            job_spawn = kind is TurnKind.SCHEDULED and entry.name == SCHEDULE_JOB
            if job_spawn and not self.limits.jobs_may_create_jobs:
                return False  # a job can't spawn jobs unless the operator allows it
            decision = decide(entry.classification.tool_class, kind, tainted)
            return entry.enabled and decision is not Decision.NOT_OFFERED

        return allow

    async def _sync(self) -> None:
        if self.board is not None:
            await self.board.sync_once()  # the worker's look just before may stand for it

    async def for_messages(
        self, recent: Sequence[Message], kind: TurnKind, tainted: bool
    ) -> ToolOffer:
        """A new turn's offer, ranked by the newest messages (they say most about what is
        wanted now; the person's newest most of all) and the tools they show were used."""
        await self._sync()
        allow = self._allow(kind, tainted)
        return self.registry.offer(wanted(recent), self.limits.max_tools, allow)

    async def size(self) -> CatalogSize:
        """For /status, /connectors and the warning past the budget."""
        await self._sync()
        offer = self.registry.offer("", self.limits.max_tools, self._allow(TurnKind.CHAT, False))
        return CatalogSize(offer.enabled, len(offer.tools), self.limits.max_tools)

    async def named(self, names: Sequence[str], kind: TurnKind, tainted: bool) -> ToolOffer:
        """A resumed turn's offer: the tools it was offered before (found ones too), those
        still allowed; the search again if some enabled tools are still left out."""
        await self._sync()
        allow = self._allow(kind, tainted)
        return self.registry.offer("", self.limits.max_tools, allow, keep=names)


def wanted(recent: Sequence[Message]) -> Wanted:
    """What the newest person's message says, the rest of `recent` less, and the tools used."""
    newest = next((m for m in reversed(recent) if m.role is Role.USER), None)
    earlier = [m.content for m in recent if m is not newest and m.role is not Role.TOOL]
    used = frozenset(call.name for m in recent for call in m.tool_calls)
    query = Query.of(newest.content if newest is not None else "", earlier)
    return Wanted(query, used)
