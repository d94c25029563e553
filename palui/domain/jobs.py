"""Scheduled jobs and their runs.

A claimed run is `queued` until its chat's worker moves it to `started`; the other states end a
run that never started.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from palui.domain.chat import TurnStatus


class RunStatus(StrEnum):
    QUEUED = "queued"  # claimed; the chat's worker will start it
    STARTED = "started"  # its turn began (its outcome is the turn's)
    SKIPPED = "skipped"  # over the job's token cap, or the job was gone
    COALESCED = "coalesced"  # a newer run of the same job was queued behind it: that one runs
    MISSED = "missed"  # due while Palui was down, past the misfire grace: not run


@dataclass(frozen=True, slots=True)
class JobRecord:
    id: int
    token: str
    chat_id: int
    prompt: str
    schedule: str
    timezone: str
    enabled: bool
    daily_token_cap: int
    anchor_at: datetime
    created_by: str
    created_at: datetime
    updated_at: datetime
    # Made in a tainted turn: that turn's source (a `Taint.origin`); its runs start tainted.
    taint_source: str | None = None
    model: str | None = None  # its chat's /model choice when it was made (None: the default)
    owner_id: int | None = None  # who asked for it; a server's question in a run goes to them


@dataclass(frozen=True, slots=True)
class RunRecord:
    id: int
    job_id: int
    chat_id: int
    scheduled_for: datetime
    status: RunStatus
    missed: int
    turn_id: str | None
    turn_status: TurnStatus | None = None
