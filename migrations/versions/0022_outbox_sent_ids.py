"""an answer part going out: where to look for it if its message id is never recorded

The outbox recorded how many of a reply's parts were in the chat, not which messages they were,
so a crash between a part's sendMessage and its record sent the part again after the restart.
Each part's record now also writes the message it became (`last_message_id`, the newest part's):
a sender that takes over a row left by a dead one probes the ids above the newest message known
before the part (see `palui.chat.outbox`), skipping every id the records name, and adopts the
message that already shows the part. `sender`: the lease holder (process) that stored the
row, written in its INSERT: a pending row another process stored may have been in flight in it.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04 10:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("last_message_id", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("sender", sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("sender")
        batch.drop_column("last_message_id")
