"""/stop across processes: a stop request for a turn another process runs

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30 05:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stop_requests",
        sa.Column("turn_id", sa.String(length=32), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("turn_id", name=op.f("pk_stop_requests")),
    )


def downgrade() -> None:
    op.drop_table("stop_requests")
