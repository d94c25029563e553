"""One record per tool call: a single writer, and the old three tables carried over by 0012."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import text

from palui.db import Database
from palui.db.calls import CallRecordRepo
from palui.db.migrations import alembic_config
from palui.db.runs import RunRepo
from tests.toolkit import REPO

PALUI = REPO / "palui"
# Statements and constructions that write the table, by model, its Table (`CALLS`, built once
# in calls.py) or by table name.
WRITES = re.compile(
    r"(insert|update|delete|fenced_insert\w*)\(\s*(CallRecordRow|call_records|CALLS\b)|"
    r"(?<!class )CallRecordRow\(|"
    r"\b(INSERT INTO|UPDATE|DELETE FROM)\s+call_records",
    re.IGNORECASE,
)


def sources() -> dict[str, str]:
    return {str(p.relative_to(PALUI.parent)): p.read_text() for p in PALUI.rglob("*.py")}


def test_only_the_call_records_repository_writes_the_table() -> None:
    writers = sorted(path for path, source in sources().items() if WRITES.search(source))
    assert writers == ["palui/db/calls.py"]


def test_only_the_call_record_tells_the_repository_what_to_write() -> None:
    # A change to a call's record is a CallChange; only the writer makes one (and the repository,
    # settling calls a dead process left running, inside recovery's transaction).
    makers = sorted(path for path, source in sources().items() if "CallChange(" in source)
    assert makers == ["palui/db/calls.py", "palui/tools/record.py"]
    settlers = sorted(p for p, s in sources().items() if "settle_interrupted(" in s)
    assert settlers == ["palui/db/calls.py", "palui/db/recovery.py"]


T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

OLD_ROWS = [
    "INSERT INTO chats (id, kind, created_at) VALUES (7, 'private', :t0)",
    "INSERT INTO sessions (id, chat_id, summary, summary_tainted, created_at) "
    "VALUES (1, 7, '', false, :t0)",
    "INSERT INTO turns (id, chat_id, session_id, kind, status, steps, tainted, started_at) "
    "VALUES ('turn-old', 7, 1, 'chat', 'done', 2, false, :t0)",
    # A call that ran, with its decision; one a hook blocked; one held and then denied.
    "INSERT INTO tool_calls (turn_id, step, tool, arguments, status, result, duration_ms, "
    "started_at, ended_at) VALUES ('turn-old', 1, 'mcp-notes__add_note', '{\"title\": \"a\"}', "
    "'ok', 'added', 250, :t1, :t2)",
    "INSERT INTO tool_calls (turn_id, step, tool, arguments, status, result, duration_ms, "
    "started_at, ended_at) VALUES ('turn-old', 1, 'mcp-notes__delete_note', '{}', 'blocked', "
    "'no deleting', 0, :t1, :t1)",
    "INSERT INTO decisions (turn_id, step, tool, tool_class, decision, decision_id, reason, "
    "created_at) VALUES ('turn-old', 1, 'mcp-notes__add_note', 'write', 'run', 'abcd1234abcd1234', "
    "'a write in a clean turn runs', :t1)",
]
OLD_STEPS = [
    # (call id, tool, stage, outcome, reason, detail, sends out, at)
    ("c0", "mcp-notes__add_note", "policy", "run", "a write in a clean turn runs",
     '{"decision_id": "abcd1234abcd1234", "class": "write"}', False, 1),
    ("c1", "mcp-notes__delete_note", "hook", "blocked", "no deleting", '{"hook": "h:b"}', False, 2),
    ("c0", "mcp-notes__add_note", "execute", "ok", "", '{"arguments": {"title": "a"}}', True, 3),
    ("c2", "mcp-notes__delete_note", "policy", "ask", "a destructive call asks",
     '{"arguments": "{}", "decision_id": "ffff0000ffff0000"}', False, 4),
    ("c2", "mcp-notes__delete_note", "approval", "denied", "the person denied it", None, False, 5),
]  # fmt: skip


async def migrate(db: Database, revision: str, *, up: bool = True) -> None:
    cfg = alembic_config(db.url)

    def run(connection: Any) -> None:
        cfg.attributes["connection"] = connection
        (command.upgrade if up else command.downgrade)(cfg, revision)

    async with db.engine.begin() as connection:
        await connection.run_sync(run)


@pytest.mark.empty_database
async def test_the_migration_carries_old_calls_steps_and_decisions_into_one_record_each(
    database_url: str,
) -> None:
    db = Database(database_url)
    try:
        await migrate(db, "0011")
        times = {f"t{n}": T0 + timedelta(seconds=n) for n in range(6)}
        async with db.engine.begin() as connection:
            for statement in OLD_ROWS:
                await connection.execute(text(statement), times)
            for call_id, tool, stage, outcome, reason, detail, sends_out, at in OLD_STEPS:
                await connection.execute(
                    text(
                        "INSERT INTO tool_steps (turn_id, step, call_id, tool, stage, outcome, "
                        "reason, detail, sends_out, duration_ms, created_at) VALUES ('turn-old', "
                        "1, :call_id, :tool, :stage, :outcome, :reason, :detail, :sends_out, "
                        "NULL, :at)"
                    ),
                    {"call_id": call_id, "tool": tool, "stage": stage, "outcome": outcome,
                     "reason": reason, "detail": detail, "sends_out": sends_out,
                     "at": times[f"t{at}"]},
                )  # fmt: skip
        await migrate(db, "head")

        runs = RunRepo(db)
        run = await runs.find_run("turn-old")
        assert run is not None and run.calls == 2  # the denied card never ran
        steps = await runs.steps("turn-old")
        assert [(s.call_id, s.stage, s.outcome) for s in steps] == [
            ("c0", "policy", "run"), ("c1", "hook", "blocked"), ("c0", "execute", "ok"),
            ("c2", "policy", "ask"), ("c2", "approval", "denied"),
        ]  # fmt: skip
        assert steps[0].detail["decision_id"] == "abcd1234abcd1234"
        async with db.engine.connect() as connection:
            rows = (
                await connection.execute(
                    text(
                        "SELECT call_id, status, result, decision, decision_id, tool_class, "
                        "sends_out, chat_id FROM call_records ORDER BY call_id"
                    )
                )
            ).all()
        assert [tuple(row) for row in rows] == [
            ("c0", "ok", "added", "run", "abcd1234abcd1234", "write", True, 7),
            ("c1", "blocked", "no deleting", None, None, None, False, 7),
            ("c2", "not_approved", None, "ask", "ffff0000ffff0000", None, False, 7),
        ]
        assert await CallRecordRepo(db).sends_since(T0) == 1  # the send cap still counts it

        await migrate(db, "0011", up=False)
        async with db.engine.connect() as connection:
            calls = (await connection.execute(text("SELECT status FROM tool_calls"))).all()
            steps_back = (await connection.execute(text("SELECT COUNT(*) FROM tool_steps"))).one()
        assert sorted(row[0] for row in calls) == ["blocked", "ok"]
        assert steps_back[0] == len(OLD_STEPS)
    finally:
        await db.close()
