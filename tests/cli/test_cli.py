"""`palui chat`, `palui doctor` and `palui migrate` as a person runs them (their `main` in this
process: `palui` as a process is tested where the process matters, e.g.
tests/cli/test_kinds_cli.py)."""

from __future__ import annotations

import io

import pytest

from palui.app.root import Palui
from palui.cli.doctor import run_doctor
from palui.config import load_settings
from palui.db import Database
from tests.fakes.cli import palui_main
from tests.fakes.model_server import Script


# The terminal is a channel like Telegram; the databases are covered by the rest of the suite,
# so these terminal tests run on SQLite only.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_palui_chat_answers_in_the_terminal_with_the_same_engine(
    settings_env, fake_model, tmp_path
) -> None:
    fake_model.queue(Script(text="Hi from the model", usage=(5, 5)))
    # `palui chat` in this process (its main, stdin and stdout): the command, not the process.
    code, out, err = await palui_main("chat", stdin="hello there\n/status\n/quit\n")
    assert code == 0, err
    assert "palui> Hi from the model" in out
    assert "Tokens today: 10" in out  # /status ran through the same service
    assert fake_model.requests[0].messages[-1]["content"] == "hello there"
    assert len(fake_model.requests) == 1


async def test_doctor_is_happy_when_everything_works(settings_env, fake_model, fake_telegram):
    fake_model.reply("pong")
    db = Database(settings_env["PALUI_DATABASE_URL"])
    await db.migrate()
    await db.close()
    out = io.StringIO()
    assert await run_doctor(None, out) == 0, out.getvalue()
    report = out.getvalue()
    assert "✅ database:" in report and "schema up to date" in report
    assert "✅ model: openai/fake-model answered (over HTTP)" in report
    assert "✅ telegram: logged in as @palui_test_bot" in report
    assert report.rstrip().endswith("All good.")


@pytest.mark.empty_database
async def test_doctor_says_how_to_fix_an_unmigrated_database_and_a_dead_model(
    settings_env, fake_model, fake_telegram, monkeypatch
) -> None:
    monkeypatch.setenv("PALUI_MODEL_API_BASE", "http://127.0.0.1:9/v1")  # nothing listens
    out = io.StringIO()
    assert await run_doctor(None, out) == 1
    report = out.getvalue()
    assert "❌ database:" in report and "fix: Run `palui migrate`" in report
    assert "❌ model:" in report and "connection refused" in report
    assert "2 problem(s) found." in report


async def test_doctor_warns_when_the_enabled_tools_are_far_past_max_tools(
    settings_env, fake_model, fake_telegram, with_notes, monkeypatch
) -> None:
    monkeypatch.setenv("PALUI_MAX_TOOLS", "2")  # the notes server's and Palui's: far past 2
    db = Database(load_settings().resolved_database_url)
    await db.migrate()
    await db.close()
    out = io.StringIO()
    assert await run_doctor(None, out) == 0, out.getvalue()  # a warning, not a problem
    report = out.getvalue()
    assert "⚠️ tools:" in report and "more than the 2 a turn is offered" in report
    assert "fix: Far past the budget" in report


async def test_doctor_reports_missing_settings(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PALUI_DATA_DIR", str(tmp_path))
    out = io.StringIO()
    assert await run_doctor(None, out) == 1
    report = out.getvalue()
    assert "❌ PALUI_TELEGRAM_TOKEN: PALUI_TELEGRAM_TOKEN is not set" in report
    assert "❌ PALUI_MODEL:" in report


async def test_doctor_exits_2_on_unreadable_config(monkeypatch) -> None:
    monkeypatch.setenv("PALUI_DATABASE_URL", "nonsense://")
    out = io.StringIO()
    assert await run_doctor(None, out) == 2
    assert out.getvalue().startswith("❌ config: PALUI_DATABASE_URL (env)")


@pytest.mark.empty_database
async def test_migrate_brings_an_empty_database_to_the_newest_schema(
    settings_env, tmp_path
) -> None:
    code, out, err = await palui_main("migrate")  # in this process: the command, not the process
    assert code == 0, err
    db = Database(settings_env["PALUI_DATABASE_URL"])
    try:
        current, head = await db.revisions()
    finally:
        await db.close()
    assert current == head
    assert f"database is at revision {head}" in out


async def test_doctor_checks_each_connector(
    settings_env, fake_model, fake_telegram, with_notes, monkeypatch
) -> None:
    config = with_notes.parent / "palui.toml"
    config.write_text(config.read_text() + '\n[mcp.ghost]\ncommand = "/nonexistent/ghost-mcp"\n')
    fake_model.reply("pong")
    db = Database(settings_env["PALUI_DATABASE_URL"])
    await db.migrate()
    await db.close()
    out = io.StringIO()
    assert await run_doctor(None, out) == 1
    report = out.getvalue()
    assert "✅ mcp-notes: connected, 12 tools" in report
    assert "❌ mcp-ghost: not connected:" in report
    assert "fix: Check [mcp.ghost] in palui.toml" in report


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_palui_chat_asks_approval_as_a_yes_no_question(
    settings_env, fake_model, with_notes, mcp_in_process, tmp_path
) -> None:
    import json

    steps = [
        Script(tool_calls=[("mcp-notes__delete_note", json.dumps({"id": "1"}))]),
        Script(text="Gone."),
    ]
    fake_model.brain = lambda request: steps.pop(0)
    # The terminal's engine in this process (`palui chat` as a process is the test above).
    lines = iter(["delete note 1", "y", "/quit"])

    def read_line(prompt: str) -> str:
        terminal.write(prompt)
        return next(lines)

    terminal = io.StringIO()
    async with Palui(load_settings(), mcp_transport=mcp_in_process) as app:
        await app.chat_console(read_line, terminal)
    out = terminal.getvalue()
    assert "🔐 Approval needed — mcp-notes__delete_note  (destructive)" in out
    assert "Approve? [y/N]" in out
    assert "palui> Gone." in out
    assert json.loads(with_notes.read_text()) == {}
