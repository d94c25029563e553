"""skills trusted by digest

A skill (a folder with a SKILL.md under PALUI_SKILLS_DIR) is offered to turns only while the
digest of every file of its folder is the one the operator trusted (`palui skills trust`, or
Trust on `/skills`). `told`: the people were told once that it changed since.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04 23:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "skill_trust",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("trusted_by", sa.String(64), nullable=False),
        sa.Column("trusted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("told", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_skill_trust")),
    )


def downgrade() -> None:
    op.drop_table("skill_trust")
