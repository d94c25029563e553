"""What the console's pages need, built once by the composition root (palui.app)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from palui.approvals.decisions import Approvals
from palui.db import Store
from palui.interact.connect import RemoteSignIns
from palui.interact.connector_sheet import ConnectorSheet
from palui.interact.job_sheet import JobSheet
from palui.skills import SkillLibrary
from palui.tools.registry import ToolRegistry


class FailureCounter(Protocol):
    """Failed sign-ins per client address: the HTTP server's `FailureThrottle`, which
    palui.app hands over (one throttle for every endpoint, each counted on its own)."""

    def retry_after(self, endpoint: str, peer: str | None) -> int | None: ...

    def failed(self, endpoint: str, peer: str | None) -> bool: ...


@dataclass(frozen=True, slots=True)
class WebDeps:
    store: Store
    approvals: Approvals  # decides as a tap does: digest-bound, single use, expiry
    now: Callable[[], datetime]
    allowed_users: frozenset[int]
    wake: Callable[[int], None]  # a decided approval: the chat's worker resumes its turn
    throttle: FailureCounter  # failed sign-ins, per client address
    registry: ToolRegistry | None = None  # tools' descriptions, as their cards show them
    session_days: int = 7
    secure_cookies: bool = False  # the public URL is https
    web_url: str | None = None  # PALUI_WEB_URL: its origin is the console's (else the Host's)
    daily_token_cap: int = 0  # 0 = off
    runs_per_hour: int = 0  # 0 = off
    job_daily_token_cap: int = 0
    # The sheets' switch logic and the scheduler, for the Connectors and Jobs pages.
    connector_sheet: ConnectorSheet | None = None  # its `switches`: the Connectors page's
    job_sheet: JobSheet | None = None  # its `control`: the Jobs page's
    jobs_changed: Callable[[], Any] | None = None
    skills: SkillLibrary | None = None  # shown on the Connectors page (trusted in the chat)
    sign_ins: RemoteSignIns | None = None  # a connector's Connect (remote MCP OAuth)
