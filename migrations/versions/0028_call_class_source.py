"""where a call's class came from when the policy decided

`palui runs explain <decision-id>` says what decided a call: its class and where that class came
from at that moment (the kinds file, the person, the server's marks, inference, unsure). The
class was recorded, its source was not; the rest of the decision's basis (width, taint, turn
kind, matrix cell, kinds file digest, inference) is kept with the policy stage.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-04 23:55:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("call_records") as batch:
        batch.add_column(sa.Column("class_source", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("call_records") as batch:
        batch.drop_column("class_source")
