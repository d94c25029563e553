"""`palui runs` and `palui runs show <turn>`: recent turns, and every step of a turn's tool calls
with its reason (hooks, guards, policy with its decision id, approval, destination guard, send
cap, ledger, execution, post hooks), so a blocked, guarded, refused or timed-out call can be
explained afterwards, from each call's record. `palui runs explain <decision-id>`: what decided
a call (its class and where it came from then, the width, the taint, the turn's kind, the matrix
cell, the kinds file's digest, inference). Reads the database only; nothing else needs
to run.

Exit codes: 0 fine, 1 a problem (no database yet, no such turn, an ambiguous prefix), 2 bad
configuration (raised as ConfigError to `palui.cli.main`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime
from typing import Any, TextIO

from palui.config import Settings, load_settings
from palui.db import Database
from palui.db.runs import RunRepo, RunSummary, StepRecord
from palui.errors import AmbiguousRun
from palui.logs import configure_logging
from palui.turns.explain import decision_basis, step_detail, timing


def add_runs_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `palui runs [show <turn>]` on the top-level subparsers."""
    runs = sub.add_parser(
        "runs",
        help="recent turns; `runs show <turn>` explains every tool call step by step",
        description="Reads the database only (no daemon, token or model needed).",
    )
    runs.add_argument("--json", action="store_true", help="JSON for scripts")
    runs.add_argument("--limit", type=int, default=20, help="how many turns (default 20)")
    commands = runs.add_subparsers(dest="runs_command")
    show = commands.add_parser("show", help="every step of one turn's tool calls, with reasons")
    show.add_argument("turn", help="the turn id, or a unique prefix of it")
    show.add_argument("--json", dest="show_json", action="store_true", help="JSON for scripts")
    explain = commands.add_parser("explain", help="what decided a call, from its decision id")
    explain.add_argument("decision", help="the decision id (`runs show` prints it)")
    explain.add_argument(
        "--json", dest="explain_json", action="store_true", help="JSON for scripts"
    )


def run_runs(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one `palui runs` command. A ConfigError propagates (the caller exits 2)."""
    out = out or sys.stdout
    settings = load_settings(args.config)
    configure_logging(settings.log_format, "error", settings.secrets())
    return asyncio.run(_runs(settings, args, out))


async def _runs(settings: Settings, args: argparse.Namespace, out: TextIO) -> int:
    db = Database(settings.resolved_database_url)
    try:
        current, _head = await db.revisions()
        if current is None:
            out.write(
                f"No runs yet: the {db.kind} database has no tables. "
                "Start Palui (or run `palui migrate`) first.\n"
            )
            return 1
        repo = RunRepo(db)
        if getattr(args, "runs_command", None) == "explain":
            as_json = args.json or args.explain_json
            return await _explain(repo, args.decision, out, as_json=as_json)
        if getattr(args, "runs_command", None) == "show":
            as_json = args.json or args.show_json
            return await _show(repo, args.turn, out, as_json=as_json)
        runs = await repo.recent_runs(max(args.limit, 1))
        if args.json:
            out.write(json.dumps([_run_json(r) for r in runs], ensure_ascii=False) + "\n")
        else:
            out.write(_runs_table(runs))
        return 0
    finally:
        await db.close()


async def _show(repo: RunRepo, prefix: str, out: TextIO, *, as_json: bool) -> int:
    try:
        run = await repo.find_run(prefix)
    except AmbiguousRun as exc:
        matches = ", ".join(exc.matches)
        out.write(f"{prefix!r} fits more than one turn ({matches}); give more of the id.\n")
        return 1
    if run is None:
        out.write(f"No turn with an id starting {prefix!r}. `palui runs` lists recent ones.\n")
        return 1
    steps = await repo.steps(run.turn_id)
    if as_json:
        data = {**_run_json(run), "steps": [_step_json(s) for s in steps]}
        out.write(json.dumps(data, ensure_ascii=False) + "\n")
    else:
        out.write(_show_text(run, steps))
    return 0


async def _explain(repo: RunRepo, decision_id: str, out: TextIO, *, as_json: bool) -> int:
    found = await repo.decisions(decision_id.strip())
    if not found:
        out.write(
            f"No call was decided under {decision_id!r}. `palui runs show <turn>` prints the "
            "decision id of each call.\n"
        )
        return 1
    newest = found[0]
    if as_json:
        data = {**_step_json(newest), "turn_id": newest.turn_id, "calls": len(found)}
        out.write(json.dumps(data, ensure_ascii=False) + "\n")
        return 0
    lines = [
        f"Decision {decision_id}: {newest.outcome}",
        f"  tool: {newest.tool} (turn {newest.turn_id}, step {newest.step}, "
        f"{_time(newest.at)} UTC)",
        *(f"  {line}" for line in decision_basis(newest.detail)),
        f"  why: {newest.reason}",
    ]
    if not decision_basis(newest.detail):
        lines.insert(2, "  (recorded before Palui kept what a decision rested on)")
    if len(found) > 1:
        lines.append(f"  {len(found)} calls were decided under this id; the newest is shown.")
    out.write("\n".join(lines) + "\n")
    return 0


def _chat(run: RunSummary, topic: str = "/") -> str:
    """The chat, and its topic if the turn ran in one (`chat/topic` in the table)."""
    return f"{run.chat_id}{topic}{run.topic_id}" if run.topic_id else str(run.chat_id)


def _time(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S") if at else "-"


def _run_json(run: RunSummary) -> dict[str, Any]:
    return {
        "turn_id": run.turn_id,
        "chat_id": run.chat_id,
        "topic_id": run.topic_id or None,
        "kind": run.kind,
        "status": run.status,
        "started_at": run.started_at.isoformat(),
        "ended_at": run.ended_at.isoformat() if run.ended_at else None,
        "calls": run.calls,
        "error": run.error,
        "trace_id": run.trace_id,
    }


def _step_json(step: StepRecord) -> dict[str, Any]:
    return {
        "step": step.step,
        "call_id": step.call_id,
        "tool": step.tool,
        "stage": step.stage,
        "outcome": step.outcome,
        "reason": step.reason,
        "detail": step.detail,
        "duration_ms": step.duration_ms,
        "at": step.at.isoformat(),
    }


def _runs_table(runs: list[RunSummary]) -> str:
    if not runs:
        return "No turns recorded yet.\n"
    lines = [f"{'STARTED (UTC)':<20} {'CHAT':>14} {'KIND':<10} {'STATUS':<12} {'CALLS':>5}  TURN"]
    for run in runs:
        lines.append(
            f"{_time(run.started_at):<20} {_chat(run):>14} {run.kind:<10} {run.status:<12} "
            f"{run.calls:>5}  {run.turn_id}"
        )
    lines.append("`palui runs show <turn>` explains a turn's tool calls (a unique prefix will do).")
    return "\n".join(lines) + "\n"


def _show_text(run: RunSummary, steps: list[StepRecord]) -> str:
    lines = [
        f"Turn {run.turn_id}",
        f"  chat {_chat(run, ' · topic ')} · {run.kind} · {run.status}"
        f" · started {_time(run.started_at)} UTC"
        + (f" · ended {_time(run.ended_at)} UTC" if run.ended_at else ""),
    ]
    if run.trace_id:  # the id its log lines carry, to find it in a tracing backend
        lines.append(f"  trace {run.trace_id}")
    if run.error:
        lines.append(f"  error: {run.error}")
    if not steps:
        lines.append("  No tool calls.")
        return "\n".join(lines) + "\n"
    current: tuple[int, str] | None = None
    for step in steps:
        # A call made inside another (a sub-turn's, palui__run_code's bridge): `<parent>/<id>`,
        # shown under its parent's, indented.
        nested = "/" in step.call_id
        indent = "    " if nested else ""
        if (step.step, step.call_id) != current:
            current = (step.step, step.call_id)
            if nested:
                parent = step.call_id.rsplit("/", 1)[0]
                lines.append(f"  ↳ {step.tool}  (call {step.call_id}, inside call {parent})")
            else:
                lines.append(f"\nModel step {step.step} · {step.tool}  (call {step.call_id})")
        took = timing(step.duration_ms)
        timed = f" {took}" if took else ""
        detail = step_detail(step)
        extra = f"  [{detail}]" if detail else ""
        reason = f"  {step.reason}" if step.reason else ""
        lines.append(f"{indent}  {step.stage:<12} {step.outcome:<12}{timed}{reason}{extra}")
    return "\n".join(lines) + "\n"
