"""How a turn's recorded steps read to a person, the same in `palui runs show` and the web
console: each stage's extra facts in one bracket, timings, and cut values."""

from __future__ import annotations

import json
from typing import Any

from palui.db.runs import StepRecord
from palui.domain import CallStage

RESULT_CHARS = 600


def step_detail(step: StepRecord) -> str:
    """The stage's facts beyond outcome and reason (decision id, hook, rewritten arguments,
    ledger action), as `decision d-1; hook x`; empty when there are none."""
    detail = step.detail
    parts = []
    if "decision_id" in detail:
        parts.append(f"decision {detail['decision_id']}")
    if "hook" in detail:
        parts.append(f"hook {detail['hook']}")
    if "before" in detail and "after" in detail and step.stage != CallStage.POST_HOOK:
        parts.append(f"arguments {compact(detail['before'])} -> {compact(detail['after'])}")
    if "action_id" in detail and detail["action_id"] is not None:
        parts.append(f"action #{detail['action_id']}")
    return "; ".join(parts)


def decision_basis(detail: dict[str, Any]) -> list[str]:
    """What a policy decision rested on, one fact a line (`palui runs explain`, the web
    console's turn page); empty for a decision recorded before its basis was kept."""
    if "cell" not in detail:
        return []
    source = detail.get("class_source") or "unknown"
    reason = f": {detail['class_reason']}" if detail.get("class_reason") else ""
    width_from = f", from {detail['width_source']}" if detail.get("width_source") else ""
    digest = detail.get("kinds_digest")
    return [
        f"class: {detail.get('class')} (from {source}{reason})",
        f"width: {detail.get('width')}{width_from}",
        f"turn: {detail.get('turn_kind')}",
        f"taint: {detail.get('taint') or 'none (no untrusted content read)'}",
        f"matrix cell: {detail['cell']}",
        f"kinds file: {f'digest {digest[:16]}' if digest else 'none'}",
        f"inference: {'on' if detail.get('infer', True) else 'off'}",
    ]


def timing(duration_ms: int | None) -> str:
    return f"{duration_ms / 1000:.1f} s" if duration_ms is not None else ""


def compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def cut(text: str | None, limit: int = RESULT_CHARS) -> str:
    """A long result, cut where a page has room (the whole stays in the record)."""
    if not text:
        return ""
    return text if len(text) <= limit else f"{text[:limit]} … ({len(text):,} characters in all)"
