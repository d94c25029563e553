"""Whether the schema is at the newest migration, read without Alembic (palui.db.migrations
imports it only when a migration runs): the database's `alembic_version` row by a plain query,
and the newest script from the scripts' own `revision = ...` / `down_revision = ...` lines."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from sqlalchemy import inspect, text

_ASSIGNED = re.compile(r"^(revision|down_revision)\s*(?::[^=]*)?=\s*(.+)$", re.MULTILINE)
_QUOTED = re.compile(r"""["']([^"']+)["']""")


def migrations_dir() -> Path:
    """The Alembic scripts: inside the wheel when installed, else the repo's `migrations/`."""
    packaged = Path(__file__).resolve().parent.parent / "_migrations"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "migrations"


@functools.cache
def newest_script(versions: Path | None = None) -> str | None:
    """The one revision no script revises (the head), or None when the scripts don't say it
    plainly (no scripts, several heads, a line this reading doesn't understand): Alembic then
    reads them itself. Read once per process: the scripts don't change under it."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for script in sorted((versions or migrations_dir() / "versions").glob("*.py")):
        found = dict(_ASSIGNED.findall(script.read_text(encoding="utf-8")))
        if "revision" not in found or "down_revision" not in found:
            return None
        own = _QUOTED.findall(found["revision"])
        if len(own) != 1:
            return None
        revisions.add(own[0])
        revised.update(_QUOTED.findall(found["down_revision"]))  # a merge revises several
    heads = revisions - revised
    return heads.pop() if len(heads) == 1 else None


def stored_revision(connection: Any) -> str | None:
    """The revision the database is at; None for a database Alembic never touched (or one
    holding several heads, which Alembic then sorts out)."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    return rows[0][0] if len(rows) == 1 else None
