"""Settings: the only reader of the environment and of `config/palui.toml`.

Every setting has one name. In the environment it is `PALUI_<NAME>`; in palui.toml it is `<name>`
at the top level, except the budgets and caps, which live under `[limits]` (and are still
`PALUI_<NAME>` in the environment, e.g. `PALUI_MAX_STEPS`). The environment wins over the file.
Sections that only make sense in a file (`[mcp.*]`, `[recall]`, `[webhooks.*]`, `[hooks]`) are
read from the file alone.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from palui.errors import ConfigError

DEFAULT_CONFIG_PATH = Path("config/palui.toml")
TELEGRAM_API_URL = "https://api.telegram.org"

# Keys that live under [limits] in palui.toml.
LIMIT_KEYS = (
    "max_steps",
    "turn_timeout_s",
    "max_tools",
    "daily_token_cap",
    "runs_per_hour",
    "daily_send_cap",
    "min_job_interval_s",
    "approval_ttl_s",
    "history_messages",
)
# Sections read from palui.toml as they are (their own issues give them a schema).
FILE_SECTIONS = ("mcp", "recall", "webhooks", "hooks")

# One line each: how to fix a bad or missing value.
FIX_HINTS = {
    "telegram_token": "Get a token from @BotFather and set it.",
    "allowed_users": "Set it to your numeric Telegram user id(s), comma-separated (e.g. 123456).",
    "model": "Set it to a litellm model name, e.g. openai/gpt-4.1-mini.",
    "database_url": (
        "Use sqlite+aiosqlite:///path/to/palui.db or postgresql+asyncpg://user:pass@host/db, "
        "or leave it unset for a SQLite file in PALUI_DATA_DIR."
    ),
    "log_format": "Use console or json.",
    "kinds_file": "Point it at your tool_kinds.yaml (`palui kinds draft` writes one).",
    "http_port": "Use a port number between 1 and 65535.",
}

SQLITE_PREFIXES = {"sqlite://": "sqlite+aiosqlite://", "sqlite+aiosqlite://": "sqlite+aiosqlite://"}
POSTGRES_PREFIXES = {
    "postgres://": "postgresql+asyncpg://",
    "postgresql://": "postgresql+asyncpg://",
    "postgresql+asyncpg://": "postgresql+asyncpg://",
}


SLUG_RE = re.compile(r"^[a-z0-9-]+$")
MODEL_TOOL_NAME_LIMIT = 64  # the longest function name the model APIs accept


class McpServerSettings(BaseModel):
    """One `[mcp.<slug>]` section: an MCP server over stdio (command) or streamable HTTP (url)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    trust: Literal["trusted", "untrusted"] = "untrusted"
    timeout_s: float = Field(default=30, gt=0)
    paused: bool = False
    enable: tuple[str, ...] = ()  # globs of tools switched on
    disable: tuple[str, ...] = ()  # globs of tools switched off (wins over enable)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if bool(self.command) == bool(self.url):
            raise ValueError("set either command (stdio) or url (streamable HTTP), not both")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        return self


def _comma_list(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, int):
        return [value]
    return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PALUI_", extra="forbid", frozen=True)

    telegram_token: SecretStr | None = None
    telegram_api_url: str = TELEGRAM_API_URL
    telegram_webhook_url: str | None = None
    telegram_webhook_secret: SecretStr | None = None
    allowed_users: Annotated[frozenset[int], NoDecode] = frozenset()

    model: str | None = None
    model_api_base: str | None = None
    model_api_key: SecretStr | None = None
    fallback_models: Annotated[tuple[str, ...], NoDecode] = ()
    model_timeout_s: float = Field(default=60, gt=0)
    stream_replies: bool = True

    kinds_file: Path = Path("config/tool_kinds.yaml")  # read when it exists
    database_url: str | None = None
    data_dir: Path = Path("data")
    config: Path | None = None

    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=1, le=65535)
    log_format: Literal["console", "json"] = "console"
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    max_steps: int = Field(default=12, ge=1)
    turn_timeout_s: float = Field(default=120, gt=0)
    max_tools: int = Field(default=30, ge=0)
    daily_token_cap: int = Field(default=2_000_000, ge=0)  # 0 = off
    runs_per_hour: int = Field(default=60, ge=0)  # 0 = off
    daily_send_cap: int = Field(default=100, ge=0)  # 0 = unlimited
    min_job_interval_s: int = Field(default=60, ge=1)
    approval_ttl_s: int = Field(default=86_400, ge=60)
    history_messages: int = Field(default=30, ge=1)

    mcp: dict[str, McpServerSettings] = Field(default_factory=dict)
    recall: dict[str, Any] = Field(default_factory=dict)
    webhooks: dict[str, dict[str, Any]] = Field(default_factory=dict)
    hooks: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The file's values arrive as init kwargs; the environment must win over them.
        return (env_settings, init_settings)

    @field_validator("allowed_users", mode="before")
    @classmethod
    def _split_users(cls, value: Any) -> Any:
        return _comma_list(value)

    @field_validator("fallback_models", mode="before")
    @classmethod
    def _split_models(cls, value: Any) -> Any:
        return _comma_list(value)

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return normalise_database_url(value.strip())

    @field_validator("mcp")
    @classmethod
    def _check_slugs(cls, value: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for slug in value:
            if not SLUG_RE.match(slug):
                raise ValueError(f"[mcp.{slug}]: a connector name may hold only a-z, 0-9 and -")
            # The longest tool name then still has room: "mcp-<slug>__<tool>" <= 64 characters.
            if len(f"mcp-{slug}__") > MODEL_TOOL_NAME_LIMIT - 16:
                raise ValueError(
                    f"[mcp.{slug}]: the name is too long (keep it under 40 characters)"
                )
        return value

    @field_validator("telegram_api_url")
    @classmethod
    def _check_api_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'palui.db').resolve()}"

    @property
    def database_kind(self) -> str:
        return "PostgreSQL" if self.resolved_database_url.startswith("postgresql") else "SQLite"

    def require(self, *names: str) -> None:
        """Raise ConfigError for the first of `names` that has no value."""
        for name in names:
            if getattr(self, name) in (None, "", frozenset(), ()):
                raise ConfigError(
                    f"PALUI_{name.upper()} is not set (env or config/palui.toml). "
                    f"{FIX_HINTS.get(name, '')}".rstrip()
                )

    def secrets(self) -> list[str]:
        """Every secret value, for log redaction."""
        found = [s.get_secret_value() for s in (self.telegram_token, self.model_api_key) if s]
        if self.telegram_webhook_secret:
            found.append(self.telegram_webhook_secret.get_secret_value())
        for hook in self.webhooks.values():
            env_name = hook.get("secret_env")
            if isinstance(env_name, str) and os.environ.get(env_name):
                found.append(os.environ[env_name])
        return [s for s in found if len(s) >= 6]


def normalise_database_url(url: str) -> str:
    """Accept the usual spellings and map them to the async drivers Palui ships."""
    for prefix, driver in {**SQLITE_PREFIXES, **POSTGRES_PREFIXES}.items():
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            if not rest.strip("/"):
                raise ValueError(f"{url!r} names no database")
            return driver + rest
    scheme = url.split("://", 1)[0] if "://" in url else url
    raise ValueError(f"{scheme!r} is not a supported database (use SQLite or PostgreSQL)")


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
            message = error["msg"].removeprefix("Value error, ")
            raise ConfigError(f"{section} in {path}: {message}.") from None
        if error["type"] == "extra_forbidden":
            raise ConfigError(f"{path}: unknown key {field!r}. Check the spelling.") from None
        message = error["msg"].removeprefix("Value error, ")
        where = _where(field, environ, path, file_values)
        hint = FIX_HINTS.get(field, "")
        raise ConfigError(f"{where}: {message}. {hint}".rstrip()) from None
