"""The base every repository shares: its database, and the dialect's INSERT (for ON CONFLICT)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from palui.db.engine import Database


class Repo:
    def __init__(self, db: Database) -> None:
        self._db = db

    def _insert(self, table: Any) -> Any:
        return (sqlite_insert if self._db.is_sqlite else pg_insert)(table)
