"""process heartbeats: a process that died is taken over in seconds, not at its leases' lapse

Each running process upserts its row (its lease holder name) every second; a chat or delivery
lease whose holder's beat is older than a few seconds may be taken over at once. Fencing (the
leases' generation) stays the guard against a process that was only paused.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-04 23:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "process_heartbeats",
        sa.Column("holder", sa.String(length=96), nullable=False),
        sa.Column("beat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("holder", name=op.f("pk_process_heartbeats")),
    )


def downgrade() -> None:
    op.drop_table("process_heartbeats")
