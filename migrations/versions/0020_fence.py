"""fenced leases: each take of a chat's lease (and of its delivery lease) gets a new generation

A holder that stalled past its lease (a long pause, a suspended VM) must not finish a turn or
send a reply another process has since recovered: every write that matters is conditional on
the generation the holder took still being the lease's. Rows are no longer deleted on release
(the holder is cleared), so the generation keeps counting up per chat.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-01 15:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

TABLES = ("chat_leases", "delivery_leases")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(
                sa.Column("generation", sa.BigInteger(), nullable=False, server_default="0")
            )


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("generation")
