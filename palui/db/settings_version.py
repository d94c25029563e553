"""The settings version: one row every switch change bumps in its own transaction (tool
switches and classes, paused connectors, memory switches), so a process knows from one
primary-key lookup whether the switches it caches are still the database's."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.models import SettingsVersion

ROW = 1  # the one row
_VERSION = SettingsVersion.__table__.c
# Built once: asked before every turn, a statement built per call costs more than its run.
_READ = select(_VERSION.version).where(_VERSION.id == ROW)


async def bump(session: AsyncSession, insert: Any) -> None:
    """Move the version on, inside the caller's transaction (an upsert: the row may be gone)."""
    await session.execute(
        insert(SettingsVersion)
        .values(id=ROW, version=1)
        .on_conflict_do_update(index_elements=["id"], set_={"version": SettingsVersion.version + 1})
    )


async def read(session: AsyncSession) -> int:
    found = await session.scalar(_READ)
    return int(found or 0)
