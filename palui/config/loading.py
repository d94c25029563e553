"""Reading palui.toml and the environment into `Settings`, and turning a refusal into one line
a person can act on: which value, where it was set (env, file or default), and how to fix it.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from palui.config.settings import FIX_HINTS, Settings
from palui.errors import ConfigError

DEFAULT_CONFIG_PATH = Path("config/palui.toml")

# Keys that live under [limits] in palui.toml.
LIMIT_KEYS = (
    "max_steps",
    "turn_timeout_s",
    "max_tools",
    "daily_token_cap",
    "runs_per_hour",
    "daily_send_cap",
    "send_cap_exempt",
    "min_job_interval_s",
    "job_daily_token_cap",
    "job_misfire_grace_s",
    "approval_ttl_s",
    "history_messages",
    "compact_after",
    "webhook_max_bytes",
    "webhook_rate_per_min",
    "allowed_destinations",
)
# Sections read from palui.toml as they are (their own issues give them a schema).
FILE_SECTIONS = (
    "mcp",
    "recall",
    "webhooks",
    "hooks",
    "guards",
    "run_code",
    "groups",
    "web",
    "media",
    "http",
)


def _read_config_file(path: Path) -> dict[str, Any]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: can't be read ({exc.strerror}). Check PALUI_CONFIG.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}). Fix the file.") from None
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "limits":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [limits] must be a table.")
            for limit, limit_value in value.items():
                if limit not in LIMIT_KEYS:
                    known = ", ".join(LIMIT_KEYS)
                    raise ConfigError(f"{path}: unknown key limits.{limit}. Known: {known}.")
                values[limit] = limit_value
        elif key in LIMIT_KEYS:
            raise ConfigError(f"{path}: {key} belongs under [limits].")
        else:
            values[key] = value
    return values


def _config_path(environ: Mapping[str, str], explicit: Path | None) -> tuple[Path | None, bool]:
    """The palui.toml to read and whether someone asked for it by name."""
    if explicit is not None:
        return explicit, True
    if environ.get("PALUI_CONFIG"):
        return Path(environ["PALUI_CONFIG"]), True
    return (DEFAULT_CONFIG_PATH, False) if DEFAULT_CONFIG_PATH.exists() else (None, False)


def _where(field: str, environ: Mapping[str, str], path: Path | None, file_values: dict) -> str:
    env_name = f"PALUI_{field.upper()}"
    if env_name in environ:
        return f"{env_name} (env)"
    if field in file_values and path is not None:
        key = f"limits.{field}" if field in LIMIT_KEYS else field
        return f"{key} in {path}"
    return f"{env_name} (default)"


def load_settings(config_path: Path | None = None) -> Settings:
    """Read the environment and palui.toml; raise ConfigError with one actionable line."""
    environ = os.environ
    path, named = _config_path(environ, config_path)
    file_values: dict[str, Any] = {}
    if path is not None:
        if not path.exists():
            if named:
                raise ConfigError(f"{path}: no such file (PALUI_CONFIG). Fix the path or unset it.")
        else:
            file_values = _read_config_file(path)
    try:
        return Settings(**file_values, config=path)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = [str(part) for part in error["loc"]]
        field = loc[0] if loc else "?"
        if field in FILE_SECTIONS and len(loc) > 1:
            section = f"[{field}.{loc[1]}]" + (f" {'.'.join(loc[2:])}" if len(loc) > 2 else "")
            if field in ("hooks", "recall", "run_code", "groups", "web", "media"):  # a plain table
                section = f"[{field}] {'.'.join(loc[1:])}"
            message = error["msg"].removeprefix("Value error, ")
            raise ConfigError(f"{section} in {path}: {message}.") from None
        if error["type"] == "extra_forbidden":
            raise ConfigError(f"{path}: unknown key {field!r}. Check the spelling.") from None
        message = error["msg"].removeprefix("Value error, ")
        where = _where(field, environ, path, file_values)
        hint = FIX_HINTS.get(field, "")
        raise ConfigError(f"{where}: {message}. {hint}".rstrip()) from None
