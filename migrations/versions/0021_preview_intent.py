"""a preview going out: where to look for it if its message id is never recorded

A streamed preview's message id is recorded right after its sendMessage; a crash between the two
left a message the re-run could not find, so the answer was shown twice. Before the first
preview goes out the turn now records the newest message id known in the chat (`preview_floor`)
and the text the preview will show (`preview_text`): the re-run probes the ids above the floor
by editing them to that text (Telegram lets a bot edit only its own messages; "not modified"
means the message shows it already) and takes the first one that is the bot's over.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-01 21:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("preview_floor", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("preview_text", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("preview_text")
        batch.drop_column("preview_floor")
