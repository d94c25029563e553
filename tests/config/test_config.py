"""Settings from env and palui.toml; bad settings stop start-up with one clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from palui.cli.main import main
from palui.config import load_settings
from palui.errors import ConfigError
from tests.toolkit import REPO


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config" / "palui.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_bad_database_url_stops_start_up_with_one_line_and_exit_code_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PALUI_DATABASE_URL", "nonsense://")
    assert main(["run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "PALUI_DATABASE_URL (env)" in err
    assert "'nonsense' is not a supported database" in err
    assert "sqlite+aiosqlite:///" in err  # says how to fix it


def test_the_installed_command_exits_2_without_a_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALUI_")}
    env["PALUI_DATABASE_URL"] = "nonsense://"
    result = subprocess.run(
        [sys.executable, "-m", "palui.cli.main", "run"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("palui: PALUI_DATABASE_URL (env):")


def test_missing_token_names_the_key_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PALUI_MODEL", "openai/x")
    monkeypatch.setenv("PALUI_ALLOWED_USERS", "1")
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "PALUI_TELEGRAM_TOKEN is not set" in err
    assert "@BotFather" in err


def test_file_values_are_read_and_the_environment_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(
        tmp_path,
        'model = "openai/from-file"\nallowed_users = [1, 2]\n'
        "[limits]\nmax_steps = 5\nruns_per_hour = 7\n",
    )
    monkeypatch.setenv("PALUI_RUNS_PER_HOUR", "9")
    settings = load_settings()
    assert settings.model == "openai/from-file"
    assert settings.allowed_users == {1, 2}
    assert settings.max_steps == 5
    assert settings.runs_per_hour == 9


def test_comma_separated_lists_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALUI_ALLOWED_USERS", "12, 34")
    monkeypatch.setenv("PALUI_FALLBACK_MODELS", "openai/a,anthropic/b")
    settings = load_settings()
    assert settings.allowed_users == {12, 34}
    assert settings.fallback_models == ("openai/a", "anthropic/b")


def test_invalid_value_in_the_file_names_key_and_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[limits]\nmax_steps = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert str(caught.value).startswith(f"limits.max_steps in {path.relative_to(tmp_path)}:")


def test_unknown_key_in_the_file_is_refused(tmp_path: Path) -> None:
    write_config(tmp_path, 'modle = "typo"\n')
    with pytest.raises(ConfigError, match="unknown key 'modle'"):
        load_settings()


def test_a_limit_outside_its_section_is_refused(tmp_path: Path) -> None:
    write_config(tmp_path, "max_steps = 3\n")
    with pytest.raises(ConfigError, match=r"belongs under \[limits\]"):
        load_settings()


def test_broken_toml_is_reported_with_the_file(tmp_path: Path) -> None:
    write_config(tmp_path, "model = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings()


def test_a_named_config_file_must_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALUI_CONFIG", "/nowhere/palui.toml")
    with pytest.raises(ConfigError, match="no such file"):
        load_settings()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgres://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("sqlite:////tmp/p.db", "sqlite+aiosqlite:////tmp/p.db"),
    ],
)
def test_database_url_spellings_map_to_async_drivers(
    monkeypatch: pytest.MonkeyPatch, given: str, expected: str
) -> None:
    monkeypatch.setenv("PALUI_DATABASE_URL", given)
    assert load_settings().resolved_database_url == expected


def test_default_database_is_a_sqlite_file_in_the_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PALUI_DATA_DIR", str(tmp_path / "state"))
    settings = load_settings()
    assert (
        settings.resolved_database_url == f"sqlite+aiosqlite:///{tmp_path / 'state' / 'palui.db'}"
    )
    assert settings.database_kind == "SQLite"


def test_the_example_config_documents_every_setting() -> None:
    from palui.config import Settings

    example = (REPO / "config" / "palui.example.toml").read_text()
    for name in Settings.model_fields:
        if name == "config":
            continue
        assert f"PALUI_{name.upper()}" in example or f"[{name}" in example, name


def test_mcp_servers_are_read_with_their_defaults(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        '[mcp.notes]\ncommand = "python"\nargs = ["-m", "notes"]\n'
        '[mcp.web]\nurl = "http://127.0.0.1:9/mcp"\ntrust = "trusted"\ntimeout_s = 5\n',
    )
    settings = load_settings()
    assert settings.mcp["notes"].args == ("-m", "notes")
    assert settings.mcp["notes"].trust == "untrusted"  # the default for MCP servers
    assert (settings.mcp["web"].trust, settings.mcp["web"].timeout_s) == ("trusted", 5)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ('[mcp.Notes]\ncommand = "x"\n', "only a-z, 0-9 and -"),
        ('[mcp.notes]\ncommand = "x"\nurl = "http://h/mcp"\n', "either command"),
        ("[mcp.notes]\nargs = []\n", "either command"),
        ('[mcp.notes]\ncommand = "x"\ntrust = "maybe"\n', "[mcp.notes] trust"),
        ('[mcp.notes]\ncommand = "x"\ncomand = "y"\n', "[mcp.notes] comand"),
    ],
)
def test_bad_mcp_sections_name_the_section(tmp_path: Path, section: str, message: str) -> None:
    write_config(tmp_path, section)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert message in str(caught.value)
