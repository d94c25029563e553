"""The base every repository shares: its database, and the dialect's INSERT (for ON CONFLICT);
and how a statement is built once to be run with a dict of values."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Table, bindparam, insert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.dml import Insert

from palui.db.engine import Database

# `Database.is_sqlite`, each value: a statement with ON CONFLICT is built once for each dialect.
DIALECTS = (True, False)


def insert_for(is_sqlite: bool) -> Any:
    """The dialect's INSERT, which has ON CONFLICT."""
    return sqlite_insert if is_sqlite else pg_insert


def insert_params(table: Table, columns: Iterable[str]) -> Insert:
    """An INSERT of one row built once, each column's value the bind parameter of its name:
    run with the row as a dict. (A statement built per call costs several times its run in
    SQLAlchemy's CPU, `palui.db.leases`.)"""
    return insert(table).values({k: bindparam(k) for k in columns})


class Repo:
    def __init__(self, db: Database) -> None:
        self._db = db

    def _insert(self, table: Any) -> Any:
        return insert_for(self._db.is_sqlite)(table)
