"""The switches a person sets in the chat, as this process caches them, kept true to the
database for every process.

Tool switches and classes (the catalog), paused connectors and memory switches are read from
memory on every offer and call, but the database is their truth: each change bumps one settings
version in its own transaction (`palui.db.settings_version`). `Switchboard.sync` asks for that
version before a turn and before each of its calls: the chat worker's one look at its queues
reads it along (`observe`), so a turn's offer and memory's switches cost no lookup of their
own, and each call asks once (`sync`, a primary-key lookup) right before it is decided. Only
when it moved since the last load are the cached switches loaded again. So a tap in one
process applies in every process from its next turn, and a call to a tool that was switched off
or whose connector was paused meanwhile is refused (`CallGate`), whichever process runs it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from palui.db import Store
from palui.tools.catalog import ToolCatalog
from palui.tools.registry import OfferedTool
from palui.tools.watch import chosen_widths, load_catalog_state

Reload = Callable[[], Awaitable[None]]


class Switchboard:
    def __init__(self, version: Callable[[], Awaitable[int]], reloads: Sequence[Reload]) -> None:
        self._version = version
        self._reloads = tuple(reloads)
        self._seen: int | None = None  # None: never loaded
        self.checks = 0  # versions asked; a seam for tests, as `loads` is
        self.loads = 0
        self.observed: int | None = None  # the last version seen, asked or observed
        self._fresh = False  # observed since the last `sync_once`

    async def sync(self) -> bool:
        """Reload the cached switches if another change was committed since; whether it did."""
        self.checks += 1
        # The version is read before the switches: a change committed in between is loaded
        # now and loaded again next time, never missed.
        return await self.observe(await self._version())

    async def sync_once(self) -> bool:
        """A turn's offer: no lookup when the chat worker's look observed the version just
        before this turn (that look stands for one turn), else `sync`."""
        if self._fresh:
            self._fresh = False
            return False
        return await self.sync()

    async def observe(self, version: int) -> bool:
        """The version as another query just read it (the chat worker's look at its queues,
        `palui.db.queues`): reload if it moved, without a lookup of its own."""
        self.observed = version
        self._fresh = True
        if version == self._seen:
            return False
        for reload in self._reloads:
            await reload()
        self._seen = version
        self.loads += 1
        return True


def catalog_reload(store: Store, catalog: ToolCatalog) -> Reload:
    async def reload() -> None:
        widths = await store.tool_settings.widths()
        catalog.reload(await load_catalog_state(store), chosen_widths(widths))

    return reload


@dataclass(frozen=True, slots=True)
class CallGate:
    """At call time, with the switches fresh: a tool offered earlier in the turn whose connector
    was paused (or whose memory tools were switched off), or which was switched off itself,
    does not run."""

    board: Switchboard
    catalog: ToolCatalog
    hidden: Callable[[str], bool]  # a connector whose tools no turn is offered now

    async def refusal(self, tool: OfferedTool, *, synced: bool = False) -> str | None:
        """`synced`: the caller synced the switches for this very call a moment ago."""
        if not synced:
            await self.board.sync()
        if self.hidden(tool.toolset.id):
            return f"{tool.toolset.id} is paused or switched off on /connectors"
        if not self.catalog.entry(tool.toolset.id, tool.remote).enabled:
            return "it is switched off on /connectors"
        return None
