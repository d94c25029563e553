"""One record per tool call: call_records replaces tool_calls, decisions and tool_steps

The old rows are carried over: each call's tool_steps rows (grouped by turn, model step and call
id) become its record's stages, and its tool_calls row (matched in order by turn, step and tool)
gives its status, result and timing; decisions give the policy columns of calls that have no
steps. Steps of a call that never got a tool_calls row (a card denied or still waiting) are kept
as a record too. Downgrade rebuilds the three tables from the records; what they never held (a
record's chat, the model's arguments of an edited call, the exact order of rows) is lost.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 09:00:00
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

NOT_RAN = ("pending", "held", "not_approved")
EXECUTED = ("running", "ok", "error", "timeout", "unknown")

tool_calls = sa.table(
    "tool_calls",
    sa.column("id", sa.Integer()), sa.column("turn_id", sa.String()),
    sa.column("step", sa.Integer()),
    sa.column("tool", sa.String()), sa.column("arguments", sa.Text()),
    sa.column("status", sa.String()), sa.column("result", sa.Text()),
    sa.column("duration_ms", sa.Integer()), sa.column("started_at", sa.DateTime(timezone=True)),
    sa.column("ended_at", sa.DateTime(timezone=True)),
)  # fmt: skip
decisions = sa.table(
    "decisions",
    sa.column("id", sa.Integer()), sa.column("turn_id", sa.String()),
    sa.column("step", sa.Integer()),
    sa.column("tool", sa.String()), sa.column("tool_class", sa.String()),
    sa.column("decision", sa.String()), sa.column("decision_id", sa.String()),
    sa.column("reason", sa.Text()), sa.column("created_at", sa.DateTime(timezone=True)),
)  # fmt: skip
tool_steps = sa.table(
    "tool_steps",
    sa.column("id", sa.Integer()), sa.column("turn_id", sa.String()),
    sa.column("step", sa.Integer()),
    sa.column("call_id", sa.String()), sa.column("tool", sa.String()),
    sa.column("stage", sa.String()), sa.column("outcome", sa.String()),
    sa.column("reason", sa.Text()), sa.column("detail", sa.Text()),
    sa.column("sends_out", sa.Boolean()), sa.column("duration_ms", sa.Integer()),
    sa.column("created_at", sa.DateTime(timezone=True)),
)  # fmt: skip
call_records = sa.table(
    "call_records",
    sa.column("id", sa.Integer()), sa.column("turn_id", sa.String()),
    sa.column("chat_id", sa.BigInteger()), sa.column("step", sa.Integer()),
    sa.column("call_id", sa.String()), sa.column("tool", sa.String()),
    sa.column("tool_class", sa.String()), sa.column("sends_out", sa.Boolean()),
    sa.column("arguments", sa.Text()), sa.column("model_arguments", sa.Text()),
    sa.column("decision", sa.String()), sa.column("decision_id", sa.String()),
    sa.column("reason", sa.Text()), sa.column("status", sa.String()),
    sa.column("result", sa.Text()), sa.column("stages", sa.Text()),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("started_at", sa.DateTime(timezone=True)),
    sa.column("ended_at", sa.DateTime(timezone=True)), sa.column("duration_ms", sa.Integer()),
)  # fmt: skip
turns = sa.table("turns", sa.column("id", sa.String()), sa.column("chat_id", sa.BigInteger()))


def upgrade() -> None:
    op.create_table(
        "call_records",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("turn_id", sa.String(length=32), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(length=128), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("tool_class", sa.String(length=16), nullable=True),
        sa.Column("sends_out", sa.Boolean(), nullable=False),
        sa.Column("arguments", sa.Text(), nullable=False),
        sa.Column("model_arguments", sa.Text(), nullable=True),
        sa.Column("decision", sa.String(length=16), nullable=True),
        sa.Column("decision_id", sa.String(length=64), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("stages", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call_records")),
    )
    with op.batch_alter_table("call_records", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_call_records_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_call_records_turn_id"), ["turn_id"], unique=False)
        batch_op.create_index(
            "ix_call_records_sends_out_started_at", ["sends_out", "started_at"], unique=False
        )
    records = _records(op.get_bind())
    if records:
        op.bulk_insert(call_records, records)
    _drop_old()


def _records(conn: Any) -> list[dict[str, Any]]:
    chats = dict(conn.execute(sa.select(turns.c.id, turns.c.chat_id)).all())
    calls = conn.execute(sa.select(tool_calls).order_by(tool_calls.c.id)).mappings().all()
    steps = conn.execute(sa.select(tool_steps).order_by(tool_steps.c.id)).mappings().all()
    rules = conn.execute(sa.select(decisions).order_by(decisions.c.id)).mappings().all()
    stories: dict[tuple[str, int, str], list[Any]] = defaultdict(list)
    for row in steps:
        stories[(row["turn_id"], row["step"], row["call_id"])].append(row)
    # Which story each tool_calls row belongs to: in order, among the stories of the same
    # turn, step and tool that ended the way a tool_calls row was written.
    waiting: dict[tuple[str, int, str], deque[tuple[str, int, str]]] = defaultdict(deque)
    for key, story in stories.items():
        if any(_wrote_a_call(row) for row in story):
            waiting[(key[0], key[1], story[0]["tool"])].append(key)
    rows: dict[tuple[str, int, str], Any] = {}
    orphans = []
    for call in calls:
        queue = waiting.get((call["turn_id"], call["step"], call["tool"]))
        if queue:
            rows[queue.popleft()] = call
        else:
            orphans.append(call)
    ruled: dict[tuple[str, int, str], deque[Any]] = defaultdict(deque)
    for rule in rules:
        ruled[(rule["turn_id"], rule["step"], rule["tool"])].append(rule)
    records = [_record(key, story, rows.get(key), ruled, chats) for key, story in stories.items()]
    records += [_record((c["turn_id"], c["step"], ""), [], c, ruled, chats) for c in orphans]
    return sorted(records, key=lambda record: record["created_at"])


def _wrote_a_call(step: Any) -> bool:
    """Whether the old runner wrote a tool_calls row right after this step."""
    stage, outcome = step["stage"], step["outcome"]
    if stage == "hook":
        return outcome in ("blocked", "supplied", "failed")
    if stage == "guard":
        return outcome == "rejected"
    if stage == "policy":  # a card's hold has the arguments in its detail, not the class
        return outcome == "refused" or "class" in json.loads(step["detail"] or "{}")
    if stage == "ledger":
        return outcome != "claimed"
    return stage in ("destination", "send_cap", "execute")


def _record(
    key: tuple[str, int, str],
    story: list[Any],
    call: Any,
    ruled: dict[tuple[str, int, str], deque[Any]],
    chats: dict[str, int],
) -> dict[str, Any]:
    turn_id, step, call_id = key
    tool = call["tool"] if call is not None else story[0]["tool"]
    stages = [_stage(row) for row in story]
    policy = [s for s in stages if s["stage"] == "policy"]
    queue = ruled.get((turn_id, step, tool))
    rule = queue.popleft() if queue and (not story or "class" in _detail(policy)) else None
    execution = next((row for row in story if row["stage"] == "execute"), None)
    edit = next((s["detail"] for s in stages if s["stage"] == "approval" and s["detail"]), {})
    held = policy[-1]["detail"].get("arguments") if policy else None
    times = [_utc(row["created_at"]) for row in story]
    if call is not None:
        times.append(_utc(call["started_at"]))
    started = None
    if execution is not None:
        started = _utc(execution["created_at"])
    elif call is not None and call["status"] in EXECUTED:
        started = _utc(call["started_at"])
    return {
        "turn_id": turn_id, "chat_id": chats.get(turn_id, 0), "step": step, "call_id": call_id,
        "tool": tool,
        "tool_class": rule["tool_class"] if rule else _detail(policy).get("class"),
        "sends_out": bool(execution is not None and execution["sends_out"]),
        "arguments": call["arguments"] if call is not None else (held or ""),
        "model_arguments": json.dumps(edit["before"]) if "before" in edit else None,
        "decision": rule["decision"] if rule else (policy[-1]["outcome"] if policy else None),
        "decision_id": rule["decision_id"] if rule else _detail(policy).get("decision_id"),
        "reason": rule["reason"] if rule else (policy[-1]["reason"] if policy else None),
        "status": call["status"] if call is not None else _unfinished(stages),
        "result": call["result"] if call is not None else None,
        "stages": json.dumps(stages, ensure_ascii=False),
        "created_at": min(times), "started_at": started,
        "ended_at": _utc(call["ended_at"]) if call is not None else None,
        "duration_ms": call["duration_ms"] if call is not None else None,
    }  # fmt: skip


def _stage(row: Any) -> dict[str, Any]:
    return {
        "stage": row["stage"], "outcome": row["outcome"], "reason": row["reason"] or "",
        "detail": json.loads(row["detail"]) if row["detail"] else {},
        "at": _utc(row["created_at"]).isoformat(), "duration_ms": row["duration_ms"],
    }  # fmt: skip


def _detail(policy: list[dict[str, Any]]) -> dict[str, Any]:
    return policy[-1]["detail"] if policy else {}


def _unfinished(stages: list[dict[str, Any]]) -> str:
    """The status of a call that never got a tool_calls row."""
    if any(s["stage"] == "approval" and s["outcome"] in ("denied", "expired", "changed")
           for s in stages):  # fmt: skip
        return "not_approved"
    if stages and stages[-1]["stage"] in ("policy", "approval"):
        return "held"
    return "pending"


def _utc(at: datetime | str) -> datetime:
    if isinstance(at, str):  # SQLite without type information hands back text
        at = datetime.fromisoformat(at)
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _drop_old() -> None:
    with op.batch_alter_table("tool_steps", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tool_steps_created_at"))
        batch_op.drop_index(batch_op.f("ix_tool_steps_turn_id"))
    op.drop_table("tool_steps")
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_decisions_turn_id"))
    op.drop_table("decisions")
    with op.batch_alter_table("tool_calls", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tool_calls_turn_id"))
        batch_op.drop_index(batch_op.f("ix_tool_calls_status"))
    op.drop_table("tool_calls")


def downgrade() -> None:
    _create_old()
    conn = op.get_bind()
    records = conn.execute(sa.select(call_records).order_by(call_records.c.id)).mappings().all()
    calls, rules, steps = [], [], []
    for r in records:
        if r["status"] not in NOT_RAN:
            calls.append({
                "turn_id": r["turn_id"], "step": r["step"], "tool": r["tool"],
                "arguments": r["arguments"], "status": r["status"], "result": r["result"],
                "duration_ms": r["duration_ms"],
                "started_at": _utc(r["started_at"] or r["created_at"]),
                "ended_at": _utc(r["ended_at"]) if r["ended_at"] else None,
            })  # fmt: skip
        if r["decision"] and r["decision_id"] and r["tool_class"]:
            rules.append({
                "turn_id": r["turn_id"], "step": r["step"], "tool": r["tool"],
                "tool_class": r["tool_class"], "decision": r["decision"],
                "decision_id": r["decision_id"], "reason": r["reason"] or "",
                "created_at": _utc(r["created_at"]),
            })  # fmt: skip
        for s in json.loads(r["stages"] or "[]"):
            steps.append({
                "turn_id": r["turn_id"], "step": r["step"], "call_id": r["call_id"],
                "tool": r["tool"], "stage": s["stage"], "outcome": s["outcome"],
                "reason": s["reason"], "detail": json.dumps(s["detail"]) if s["detail"] else None,
                "sends_out": bool(r["sends_out"] and s["stage"] == "execute"),
                "duration_ms": s["duration_ms"], "created_at": _utc(s["at"]),
            })  # fmt: skip
    for table, rows in ((tool_calls, calls), (decisions, rules), (tool_steps, steps)):
        if rows:
            op.bulk_insert(table, sorted(rows, key=_when))
    with op.batch_alter_table("call_records", schema=None) as batch_op:
        batch_op.drop_index("ix_call_records_sends_out_started_at")
        batch_op.drop_index(batch_op.f("ix_call_records_turn_id"))
        batch_op.drop_index(batch_op.f("ix_call_records_status"))
    op.drop_table("call_records")


def _when(row: dict[str, Any]) -> datetime:
    return row.get("created_at") or row["started_at"]


def _create_old() -> None:
    op.create_table(
        "tool_calls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("turn_id", sa.String(length=32), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("arguments", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_calls")),
    )
    with op.batch_alter_table("tool_calls", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tool_calls_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_tool_calls_turn_id"), ["turn_id"], unique=False)
    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("turn_id", sa.String(length=32), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("tool_class", sa.String(length=16), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=False),
        sa.Column("decision_id", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_decisions")),
    )
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_decisions_turn_id"), ["turn_id"], unique=False)
    op.create_table(
        "tool_steps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("turn_id", sa.String(length=32), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(length=128), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=24), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("sends_out", sa.Boolean(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_steps")),
    )
    with op.batch_alter_table("tool_steps", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tool_steps_turn_id"), ["turn_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_tool_steps_created_at"), ["created_at"], unique=False)
