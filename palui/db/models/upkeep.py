"""When a daily duty last ran (the retention prune), shared by every process on the database."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from palui.db.models.base import Base, UTCDateTime


class UpkeepMark(Base):
    """One row per duty; a process runs it only after moving `last_run_at` forward with a
    conditional update, so with several processes at most one runs it in a day."""

    __tablename__ = "upkeep_marks"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    last_run_at: Mapped[datetime] = mapped_column(UTCDateTime)
