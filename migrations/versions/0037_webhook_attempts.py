"""a webhook delivery's attempts: a summary whose turn never ends is not tried forever

A delivery whose summarising turn failed to end (a statement error at its end, a process that
died in it) stayed unhandled, so the chat's worker took it again every few seconds, each time a
new model request. Each attempt is now counted in the delivery's row as the turn claims it (the
same statement), and a delivery already attempted twice is marked handled with one note to its
chat instead (`palui.chat.attempts`).

Revision ID: 0037
Revises: 0036
Create Date: 2026-12-06 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD/DROP COLUMN (SQLite has both): no table rebuild for one counter.
    op.add_column(
        "webhook_deliveries",
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_column("webhook_deliveries", "attempts")
