"""a turn's trace id

The OpenTelemetry trace id of the turn's span (the id its log lines carry), written when the turn
starts, for the web console's turn page and `palui runs show`. None when tracing is off.

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-06 00:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD/DROP COLUMN (SQLite has both): a batch would rebuild a table other rows refer to.
    op.add_column("turns", sa.Column("trace_id", sa.String(length=32), nullable=True))


def downgrade() -> None:
    op.drop_column("turns", "trace_id")
