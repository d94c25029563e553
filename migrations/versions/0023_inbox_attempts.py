"""an update's attempts: a message that crashes the process twice is not tried forever

A message whose handling kills the process (a file that exhausts memory, a bug on one input)
stayed pending, so every restart took it again and died again. Each attempt at an update is
now counted in its inbox row before the attempt runs (a chat turn's start counts it in its own
transaction; a file's reading counts it first), so a kill -9 counts too; an update already
attempted twice gets an apology and is marked done instead (`palui.chat.attempts`).

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04 22:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("inbox") as batch:
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("inbox") as batch:
        batch.drop_column("attempts")
