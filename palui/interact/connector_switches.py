"""The connector switches a person sets, wherever they set them: the `/connectors` cards in the
chat (`palui.interact.connector_sheet`) and the web console's Connectors page (`palui.web`).

One place that reads and changes them, so both see and write the same stored settings: a tool's
switch and class (`ToolSettingRepo`, which bumps the settings version, so every process reloads
before its next turn), a connector's pause (`PausedConnectors`) and width, and recall's memory
switches.
`fresh` syncs the cached switches with the database first (`Switchboard`), so what is shown and
changed is what a tap in another process set.
"""

from __future__ import annotations

from dataclasses import replace

from palui.db import Store
from palui.domain import RECALL_ID, ConnectorState, ToolSettingRecord
from palui.interact.paused import PausedConnectors
from palui.logs import get_logger
from palui.memory import Memory
from palui.memory.switches import Switch
from palui.policy.classes import ToolClass
from palui.policy.matrix import Width
from palui.ports import Toolset
from palui.tools.catalog import CatalogEntry, ToolCatalog, WidthSource
from palui.tools.registry import ToolRegistry
from palui.tools.switchboard import Switchboard
from palui.tools.watch import stored_tool

log = get_logger("palui.interact.connector_switches")

# What each width lets run without a card in a chat turn with no untrusted content.
WIDTH_WORDS = {
    Width.READS: "reads only; every write asks",
    Width.WRITES: "reads and writes; destructive calls ask",
    Width.ALL: "everything, destructive calls too",
}


class ConnectorSwitches:
    def __init__(
        self,
        store: Store,
        registry: ToolRegistry,
        catalog: ToolCatalog,
        *,
        paused: PausedConnectors,
        memory: Memory | None = None,
        board: Switchboard | None = None,
    ) -> None:
        self._store = store
        self._registry = registry
        self._catalog = catalog
        self._board = board
        self.paused = paused
        self.memory = memory

    async def fresh(self) -> None:
        """The switches as stored now (another process may have changed them)."""
        if self._board is not None:
            await self._board.sync()
        if self.memory is not None:
            await self.memory.refresh(checks=True)

    # -- reading ---------------------------------------------------------------------------------

    @property
    def toolsets(self) -> list[Toolset]:
        return list(self._registry.toolsets)

    def entries(self, toolset: Toolset) -> list[CatalogEntry]:
        return [self._catalog.entry(toolset.id, remote) for remote in toolset.tools()]

    def state(self, toolset: Toolset) -> str:
        """ "paused", "connected", or what is wrong with it."""
        if self.paused.is_paused(toolset.id):
            return "paused"
        status = toolset.status()
        if status.state == ConnectorState.CONNECTED:
            return "connected"
        return status.error or str(status.state)

    def connector(self, connector_id: str) -> Toolset | None:
        return next((t for t in self._registry.toolsets if t.id == connector_id), None)

    def tool(self, name: str) -> tuple[Toolset, CatalogEntry] | None:
        """A tool by its full name (`mcp-notes__add_note`), as it is offered now."""
        for toolset in self._registry.toolsets:
            for entry in self.entries(toolset):
                if entry.name == name:
                    return toolset, entry
        return None

    def has_memory_switches(self, toolset: Toolset) -> bool:
        return toolset.id == RECALL_ID and self.memory is not None

    # -- changing --------------------------------------------------------------------------------

    async def set_tool(self, entry: CatalogEntry, enabled: bool) -> None:
        await self._save(entry, enabled=enabled)
        log.info("tool_switched", tool=entry.name, enabled=enabled)

    async def set_class(self, entry: CatalogEntry, tool_class: ToolClass) -> None:
        await self._save(entry, tool_class=tool_class)
        log.info("class_set_in_chat", tool=entry.name, tool_class=str(tool_class))

    async def enable_read(self, toolset: Toolset) -> int:
        """Switch on every read tool of the connector that is off; how many."""
        count = 0
        for entry in self.entries(toolset):
            if entry.classification.tool_class is ToolClass.READ and not entry.enabled:
                await self._save(entry, enabled=True)
                count += 1
        return count

    def width(self, toolset: Toolset) -> tuple[Width, WidthSource]:
        """The connector's width and where it comes from."""
        return self._catalog.width(toolset.id), self._catalog.width_source(toolset.id)

    async def set_width(self, toolset: Toolset, width: Width) -> None:
        """Recorded as the person's choice; every process reloads it before its next turn."""
        await self._store.tool_settings.set_width(toolset.id, str(width))
        self._catalog.choose_width(toolset.id, width)
        log.info("connector_width_set", connector=toolset.id, allow=str(width))

    async def set_paused(self, toolset: Toolset, paused: bool) -> None:
        await self.paused.set(toolset.id, paused)
        log.info("connector_paused" if paused else "connector_resumed", connector=toolset.id)

    async def set_memory(self, switch: Switch, on: bool) -> bool:
        """Set one of recall's switches (read fresh first); its value now."""
        assert self.memory is not None
        await self.memory.refresh()
        if self.memory.switches.get(switch) != on:
            await self.memory.toggle(switch)
        log.info("memory_switch_set", switch=str(switch), on=on)
        return on

    async def _save(
        self,
        entry: CatalogEntry,
        *,
        enabled: bool | None = None,
        tool_class: ToolClass | None = None,
    ) -> None:
        saved = (await self._store.tool_settings.all()).get(entry.name)
        record = saved or ToolSettingRecord(
            entry.name, entry.enabled, None, entry.classification.definition_hash, False
        )
        if enabled is not None:
            record = replace(record, enabled=enabled)
        if tool_class is not None:
            # A person looked at it: a class of theirs also clears a changed-definition flag.
            record = replace(
                record,
                tool_class=str(tool_class),
                needs_review=False,
                definition_hash=entry.classification.definition_hash,
            )
        await self._store.tool_settings.save(record)
        self._catalog.remember(entry.name, stored_tool(record))
