"""Persistence: SQLAlchemy models, the database handle and repositories.

The only package that imports sqlalchemy.
"""

from palui.db.engine import Database, alembic_config, migrations_dir
from palui.db.store import History, InboxItem, OutboxItem, Store, day_start, hour_ago

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
