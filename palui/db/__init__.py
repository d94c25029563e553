"""Persistence: SQLAlchemy models, the database handle and repositories (one module per concept,
gathered by `Store`). Repositories return the records of `palui.domain`.

The only package that imports sqlalchemy.
"""

from palui.db.engine import Database
from palui.db.revisions import migrations_dir
from palui.db.sessions import History
from palui.db.store import Store

__all__ = [
    "Database",
    "History",
    "Store",
    "migrations_dir",
]
