"""Alembic, the schema's migrations: the only module importing it, and only when a migration
runs (or a command asks for the revisions).

Alembic and Mako are ~10 MB of memory and ~0.15 s of start-up that a daemon whose database is
already at head never needs: `Database.migrate` first reads the stored revision with a plain
query and compares it with the newest script (`newest_script`, read from the scripts' own
`revision`/`down_revision` lines), and imports this module only when they differ.
"""

from __future__ import annotations

from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from palui.db.revisions import migrations_dir


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(connection: Any, url: str, revision: str) -> None:
    """Alembic's upgrade to `revision`, on `connection` (inside its transaction)."""
    cfg = alembic_config(url)
    cfg.attributes["connection"] = connection
    command.upgrade(cfg, revision)


def head(url: str) -> str | None:
    """The newest revision the scripts hold, as Alembic reads them."""
    return ScriptDirectory.from_config(alembic_config(url)).get_current_head()


def current(connection: Any) -> str | None:
    """The revision the database is at, as Alembic reads it."""
    return MigrationContext.configure(connection).get_current_revision()
