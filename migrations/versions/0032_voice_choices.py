"""voice replies, a chat's chosen model, a voice note's 🎙 line stored once, group authors

A chat's /model choice and /voice switch live on its row; a turn reads them with its INSERT (the
model it asks, whether its answer is also spoken) and a reply carries the spoken flag to its
delivery. A job keeps the model its chat had chosen when it was made. A reply about an inbox
update (the 🎙 line) is unique per update: a re-run after a crash stores no second one. A group
message keeps its author's label, which reaches the model as the message's name.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-05 21:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD/DROP COLUMN (SQLite has both): a batch would rebuild tables other rows refer to.
    op.add_column("chats", sa.Column("model", sa.String(length=200), nullable=True))
    op.add_column(
        "chats", sa.Column("voice_replies", sa.Boolean(), nullable=False, server_default="1")
    )
    op.add_column("turns", sa.Column("model", sa.String(length=200), nullable=True))
    op.add_column("turns", sa.Column("voice", sa.Boolean(), nullable=False, server_default="0"))
    op.add_column("outbox", sa.Column("voice", sa.Boolean(), nullable=False, server_default="0"))
    op.add_column("outbox", sa.Column("about_update", sa.BigInteger(), nullable=True))
    op.create_index("uq_outbox_about_update", "outbox", ["about_update"], unique=True)
    op.add_column("jobs", sa.Column("model", sa.String(length=200), nullable=True))
    op.add_column("messages", sa.Column("author", sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.drop_column("messages", "author")
    op.drop_column("jobs", "model")
    op.drop_index("uq_outbox_about_update", table_name="outbox")
    op.drop_column("outbox", "about_update")
    op.drop_column("outbox", "voice")
    op.drop_column("turns", "voice")
    op.drop_column("turns", "model")
    op.drop_column("chats", "voice_replies")
    op.drop_column("chats", "model")
