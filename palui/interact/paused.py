"""Which connectors a person paused on the connector sheet: their tools are offered to no turn.

Loaded at start, kept in step by `set`, and loaded again by the `Switchboard` whenever the settings
version moved (a pause in another process); turns, memory and /status ask `is_paused` on every
offer, so it is answered from memory rather than a query.
"""

from __future__ import annotations

from palui.db.tools import ToolSettingRepo


class PausedConnectors:
    def __init__(self, repo: ToolSettingRepo) -> None:
        self._repo = repo
        self._paused: set[str] = set()

    async def load(self) -> None:
        self._paused = await self._repo.paused_connectors()

    def is_paused(self, connector_id: str) -> bool:
        return connector_id in self._paused

    async def set(self, connector_id: str, paused: bool) -> None:
        await self._repo.set_paused(connector_id, paused)
        (self._paused.add if paused else self._paused.discard)(connector_id)
