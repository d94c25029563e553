"""a job's owner: who asked for it, so a server's question during one of its runs has someone to
go to (the job's chat, like its cards, answered only by them)

Jobs made before are given the person whose message started the turn that made them (their
`created_by` names that turn), where that turn is still kept.

Revision ID: 0036
Revises: 0035
Create Date: 2026-12-06 01:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD/DROP COLUMN (SQLite has both): a batch would rebuild a table others refer to.
    op.add_column("jobs", sa.Column("owner_id", sa.BigInteger(), nullable=True))
    op.execute(
        "UPDATE jobs SET owner_id = (SELECT turns.requester_id FROM turns"
        " WHERE jobs.created_by = 'chat turn ' || turns.id)"
    )


def downgrade() -> None:
    op.drop_column("jobs", "owner_id")
