"""Taint that travels: a job created in a tainted turn records that turn's source

Its runs start tainted and name it (DESIGN §1.1). Jobs made before this have none: they run as
they always did.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 12:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("taint_source", sa.String(length=160), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("taint_source")
