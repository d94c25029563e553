"""Persistence: SQLAlchemy models, the database handle and repositories (one module per concept,
gathered by `Store`). Repositories return the records of `palui.domain`.

The only package that imports sqlalchemy.
"""

from palui.db.engine import Database, alembic_config, migrations_dir
from palui.db.sessions import History
from palui.db.store import Store, day_start, hour_ago
from palui.domain import InboxItem, OutboxItem

__all__ = [
    "Database",
    "History",
    "InboxItem",
    "OutboxItem",
    "Store",
    "alembic_config",
    "day_start",
    "hour_ago",
    "migrations_dir",
]
