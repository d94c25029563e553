"""Per-tool settings: switches, classes set in the chat, last seen definitions, paused
connectors and the widths people chose. (Each call's record is `palui.db.calls`.) Every change
bumps the settings version in its own transaction (`palui.db.settings_version`): other
processes reload from their next turn."""

from __future__ import annotations

from sqlalchemy import select

from palui.db import settings_version
from palui.db.models import ConnectorSetting, ToolSetting, utcnow
from palui.db.repo import Repo
from palui.domain import ToolSettingRecord


class ToolSettingRepo(Repo):
    """Per-tool switches and classes set in the chat, and each tool's last seen definition."""

    async def all(self) -> dict[str, ToolSettingRecord]:
        async with self._db.session() as s:
            rows = await s.scalars(select(ToolSetting))
            return {
                r.tool: ToolSettingRecord(
                    r.tool, r.enabled, r.tool_class, r.definition_hash, r.needs_review
                )
                for r in rows
            }

    async def save(self, record: ToolSettingRecord) -> None:
        # An upsert: processes starting together all remember the same new tools.
        values = {
            "enabled": record.enabled,
            "tool_class": record.tool_class,
            "definition_hash": record.definition_hash,
            "needs_review": record.needs_review,
            "updated_at": utcnow(),
        }
        async with self._db.session() as s, s.begin():
            await s.execute(
                self._insert(ToolSetting)
                .values(tool=record.tool, **values)
                .on_conflict_do_update(index_elements=["tool"], set_=values)
            )
            await settings_version.bump(s, self._insert)

    async def add_new(self, record: ToolSettingRecord) -> bool:
        """Remember a tool seen for the first time, unless a row for it exists by now (a person
        switched it on meanwhile, or another process remembered it): never overwrites one."""
        values = {
            "tool": record.tool,
            "enabled": record.enabled,
            "tool_class": record.tool_class,
            "definition_hash": record.definition_hash,
            "needs_review": record.needs_review,
            "updated_at": utcnow(),
        }
        async with self._db.session() as s, s.begin():
            added = await s.execute(
                self._insert(ToolSetting)
                .values(**values)
                .on_conflict_do_nothing(index_elements=["tool"])
                .returning(ToolSetting.tool)
            )
            if added.first() is None:
                return False
            await settings_version.bump(s, self._insert)
        return True

    async def version(self) -> int:
        """The settings version: one primary-key lookup, asked before every turn's offer."""
        async with self._db.session() as s:
            return await settings_version.read(s)

    async def paused_connectors(self) -> set[str]:
        async with self._db.session() as s:
            rows = await s.scalars(
                select(ConnectorSetting.connector_id).where(ConnectorSetting.paused.is_(True))
            )
            return set(rows)

    async def set_paused(self, connector_id: str, paused: bool) -> None:
        await self._set_connector(connector_id, paused=paused)

    async def widths(self) -> dict[str, str]:
        """The widths people chose, by connector (the rest follow palui.toml)."""
        async with self._db.session() as s:
            rows = await s.execute(
                select(ConnectorSetting.connector_id, ConnectorSetting.allow).where(
                    ConnectorSetting.allow.is_not(None)
                )
            )
            return {connector_id: str(allow) for connector_id, allow in rows}

    async def set_width(self, connector_id: str, allow: str) -> None:
        await self._set_connector(connector_id, allow=allow)

    async def _set_connector(
        self, connector_id: str, *, paused: bool | None = None, allow: str | None = None
    ) -> None:
        async with self._db.session() as s, s.begin():
            row = await s.get(ConnectorSetting, connector_id)
            if row is None:
                row = ConnectorSetting(connector_id=connector_id, paused=False)
                s.add(row)
            if paused is not None:
                row.paused = paused
            if allow is not None:
                row.allow = allow
            row.updated_at = utcnow()
            await s.flush()
            await settings_version.bump(s, self._insert)
