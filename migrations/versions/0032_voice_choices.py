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
    with op.batch_alter_table("chats") as batch:
        batch.add_column(sa.Column("model", sa.String(length=200), nullable=True))
        batch.add_column(
            sa.Column("voice_replies", sa.Boolean(), nullable=False, server_default="1")
        )
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("model", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("voice", sa.Boolean(), nullable=False, server_default="0"))
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("voice", sa.Boolean(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("about_update", sa.BigInteger(), nullable=True))
        batch.create_unique_constraint(op.f("uq_outbox_about_update"), ["about_update"])
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("model", sa.String(length=200), nullable=True))
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("author", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("author")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("model")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_constraint(op.f("uq_outbox_about_update"), type_="unique")
        batch.drop_column("about_update")
        batch.drop_column("voice")
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("voice")
        batch.drop_column("model")
    with op.batch_alter_table("chats") as batch:
        batch.drop_column("voice_replies")
        batch.drop_column("model")
