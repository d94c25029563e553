"""a streamed preview is remembered: on its turn (so a re-run after a crash takes it over) and
on the reply's outbox row (so the reply's first part is delivered as an edit of it)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01 14:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.add_column(sa.Column("preview_message_id", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("edit_message_id", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_column("edit_message_id")
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.drop_column("preview_message_id")
