"""Keeps the tool catalog and the database in step with what the connectors serve.

A tool seen for the first time is remembered with its switch and definition hash. A tool whose
definition changed since then (a "rug pull": same name, new description, schema or marks)
loses a class that came from its marks or inference, is switched off unless it is still read,
and the people who use Palui are told.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Mapping

from palui.db import Store
from palui.domain import ToolSettingRecord
from palui.logs import get_logger
from palui.policy.matrix import Width, known_width
from palui.ports import Toolset
from palui.tools.catalog import StoredTool, ToolCatalog

log = get_logger("palui.tools.watch")

Notify = Callable[[str], Awaitable[None]]


def stored_tool(record: ToolSettingRecord) -> StoredTool:
    from palui.policy.classes import ToolClass

    tool_class = ToolClass(record.tool_class) if record.tool_class else None
    return StoredTool(record.enabled, tool_class, record.definition_hash, record.needs_review)


def chosen_widths(stored: Mapping[str, str]) -> dict[str, Width]:
    """The widths people chose, as stored; one nobody can read is the strictest."""
    return {connector_id: known_width(allow) for connector_id, allow in stored.items()}


async def load_catalog_state(store: Store) -> dict[str, StoredTool]:
    return {name: stored_tool(r) for name, r in (await store.tool_settings.all()).items()}


class ToolWatch:
    def __init__(self, store: Store, catalog: ToolCatalog, notify: Notify) -> None:
        self._store = store
        self._catalog = catalog
        self._notify = notify

    async def sync(self, toolsets: Iterable[Toolset], *, at_start: bool = False) -> list[str]:
        """Remember new tools; flag changed ones; at start, apply palui.toml's switches.
        Returns the names whose definitions changed."""
        changed_names = []
        saved = await self._store.tool_settings.all()
        for toolset in toolsets:
            for remote in toolset.tools():
                entry = self._catalog.entry(toolset.id, remote)
                record = saved.get(entry.name)
                digest = entry.classification.definition_hash
                by_file = self._catalog.file_switch(toolset.id, remote.name)
                if record is None:
                    new = ToolSettingRecord(entry.name, entry.enabled, None, digest, False)
                    # Only if still absent: a switch saved since `all()` above is kept (the
                    # settings version it bumped makes every process reload it).
                    if await self._store.tool_settings.add_new(new):
                        self._catalog.remember(entry.name, stored_tool(new))
                    continue
                if entry.changed and not record.needs_review:
                    new = ToolSettingRecord(
                        entry.name, entry.enabled, record.tool_class, digest, True
                    )
                    changed_names.append(entry.name)
                elif at_start and by_file is not None and by_file != record.enabled:
                    enabled = by_file and not (
                        entry.changed and entry.classification.tool_class != "read"
                    )
                    new = dataclasses.replace(record, enabled=enabled)
                else:
                    continue
                await self._store.tool_settings.save(new)
                self._catalog.remember(entry.name, stored_tool(new))
        for name in changed_names:
            log.warning("tool_definition_changed", tool=name)
            await self._notify(
                f"⚠️ {name} changed its definition after it was classified. Until someone looks "
                "at it again it counts as destructive and is switched off. To trust it again, "
                "name it with its class in config/tool_kinds.yaml."
            )
        return changed_names
