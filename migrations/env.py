"""Alembic environment.

Palui calls this with a live connection (`Database.migrate`); the `alembic` command line calls it
without one and gets the URL from PALUI_DATABASE_URL (or the default SQLite file).
"""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import context
from sqlalchemy.ext.asyncio import create_async_engine

from palui.db.models import Base, UTCDateTime

config = context.config
target_metadata = Base.metadata


def _render_item(type_: str, obj: Any, autogen_context: Any) -> str | bool:
    # Migrations must not import application types: UTCDateTime is a plain timestamptz column.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _run(connection: Any) -> None:
    context.configure(
        render_item=_render_item,
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _url() -> str:
    # Set by Palui's own calls; the `alembic` command line (pyproject.toml) has no ini section.
    if config.file_config.has_option(config.config_ini_section, "sqlalchemy.url"):
        return config.get_main_option("sqlalchemy.url", "")
    from palui.config import load_settings

    return load_settings().resolved_database_url


async def _run_async() -> None:
    engine = create_async_engine(_url())
    async with engine.begin() as connection:
        await connection.run_sync(_run)
    await engine.dispose()


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
elif (connection := config.attributes.get("connection")) is not None:
    _run(connection)
else:
    asyncio.run(_run_async())
