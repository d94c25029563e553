"""Repositories for tools: each call's record and policy decision, and per-tool settings
(switches, classes set in the chat, last seen definitions, paused connectors)."""

from __future__ import annotations

from sqlalchemy import select, update

from palui.db.models import ConnectorSetting, ToolCallRow, ToolSetting, utcnow
from palui.db.models import Decision as DecisionRow
from palui.db.repo import Repo
from palui.domain import ToolSettingRecord as ToolSettingRecord  # re-exported: its old home


class ToolCallRepo(Repo):
    """Implements `palui.ports.CallRecorder`."""

    async def call_started(self, turn_id: str, step: int, tool: str, arguments: str) -> int:
        async with self._db.session() as s, s.begin():
            row = ToolCallRow(
                turn_id=turn_id, step=step, tool=tool, arguments=arguments, status="running",
                started_at=utcnow(),
            )  # fmt: skip
            s.add(row)
            await s.flush()
            return row.id

    async def call_ended(self, record_id: int, status: str, result: str, duration_s: float) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(ToolCallRow)
                .where(ToolCallRow.id == record_id)
                .values(
                    status=status,
                    result=result,
                    duration_ms=round(duration_s * 1000),
                    ended_at=utcnow(),
                )
            )

    async def decision_recorded(
        self,
        turn_id: str,
        step: int,
        tool: str,
        tool_class: str,
        decision: str,
        decision_id: str,
        reason: str,
    ) -> None:
        async with self._db.session() as s, s.begin():
            s.add(
                DecisionRow(
                    turn_id=turn_id, step=step, tool=tool[:128], tool_class=str(tool_class),
                    decision=str(decision), decision_id=decision_id, reason=reason,
                    created_at=utcnow(),
                )
            )  # fmt: skip


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

    async def paused_connectors(self) -> set[str]:
        async with self._db.session() as s:
            rows = await s.scalars(
                select(ConnectorSetting.connector_id).where(ConnectorSetting.paused.is_(True))
            )
            return set(rows)

    async def set_paused(self, connector_id: str, paused: bool) -> None:
        async with self._db.session() as s, s.begin():
            row = await s.get(ConnectorSetting, connector_id)
            if row is None:
                row = ConnectorSetting(connector_id=connector_id)
                s.add(row)
            row.paused = paused
            row.updated_at = utcnow()
