"""a signed webhook delivery is accepted once: its signature stored, unique per webhook

Revision ID: 0014
Revises: 0012
Create Date: 2026-12-01 13:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("replay_key", sa.String(length=80), nullable=True))
        batch_op.create_index(
            "ix_webhook_deliveries_webhook_replay_key", ["webhook", "replay_key"], unique=True
        )


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_webhook_replay_key")
        batch_op.drop_column("replay_key")
