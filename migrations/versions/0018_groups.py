"""group chats: a turn records whose message started it (`[groups] approver = "requester"`) and
the message its answer is threaded to; the reply's outbox row carries that message

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-01 15:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.add_column(sa.Column("requester_id", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("reply_to", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reply_to", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_column("reply_to")
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.drop_column("reply_to")
        batch_op.drop_column("requester_id")
