"""A turn's budgets and caps, as the operator set them (`[limits]` in palui.toml)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from palui.tools.rules import ToolRules


@dataclass(frozen=True, slots=True)
class Limits:
    max_steps: int = 12
    turn_timeout_s: float = 120
    history_messages: int = 30
    daily_token_cap: int = 0
    runs_per_hour: int = 0
    max_tools: int = 30
    tool_result_chars: int = 16_000
    # Hooks, guards and the daily send cap (palui.tools.rules).
    tool_rules: ToolRules = dataclasses.field(default_factory=ToolRules)
    jobs_may_create_jobs: bool = False  # offer palui__schedule_job to a job's own run
    # `[limits] allowed_destinations`: a tainted turn sends out there without a card too.
    allowed_destinations: tuple[str, ...] = ()
