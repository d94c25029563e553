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
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

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
    "job_daily_token_cap",
    "job_misfire_grace_s",
    "approval_ttl_s",
    "history_messages",
    "compact_after",
    "webhook_max_bytes",
    "webhook_rate_per_min",
)
# Sections read from palui.toml as they are (their own issues give them a schema).
FILE_SECTIONS = ("mcp", "recall", "webhooks", "hooks", "guards")

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
    "http_port": "Use a port number between 1 and 65535 (0 picks a free one).",
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


HOOK_PATH_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class HooksSettings(BaseModel):
    """`[hooks]`: operator callables run around every tool call (palui.tools.hooks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pre: tuple[str, ...] = ()
    post: tuple[str, ...] = ()
    timeout_s: float = Field(default=5, gt=0, le=300)

    @field_validator("pre", "post")
    @classmethod
    def _dotted(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for path in value:
            if not HOOK_PATH_RE.match(path):
                raise ValueError(
                    f"{path!r} is not a hook path; write it as package.module:function"
                )
        return value


class ArgumentRule(BaseModel):
    """`[guards."<tool>".args.<name>]`: JSON-schema style checks on one argument."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    required: bool = False
    pattern: str | None = None
    enum: tuple[Any, ...] | None = None
    min_length: int | None = Field(default=None, ge=0)
    max_length: int | None = Field(default=None, ge=0)
    minimum: float | None = None
    maximum: float | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                message = f"pattern {value!r} is not a valid regular expression ({exc})"
                raise ValueError(message) from None
        return value


class ToolGuardSettings(BaseModel):
    """`[guards."<tool full name>"]`: pinned values and argument rules (palui.tools.guards)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pin: dict[str, Any] = Field(default_factory=dict)
    args: dict[str, ArgumentRule] = Field(default_factory=dict)


WEBHOOK_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class WebhookSettings(BaseModel):
    """One `[webhooks.<name>]` section: where its summaries go and where its secret lives."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chat_id: int
    secret_env: str  # the name of the environment variable holding the secret, never the secret
    instructions: str = ""

    @field_validator("secret_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not ENV_NAME_RE.match(value):
            raise ValueError(
                "secret_env must name an environment variable, e.g. GITHUB_HOOK_SECRET"
            )
        return value

    def secret(self) -> str | None:
        return os.environ.get(self.secret_env) or None


class RecallSettings(BaseModel):
    """`[recall]`: long-term memory. Empty: the bundled recall server over stdio, its file in
    PALUI_DATA_DIR. `url` (streamable HTTP) or `command` (stdio) points at another recall server
    instead. In the environment: `PALUI_RECALL__ENABLED=false` and so on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True  # false: no recall connector, no memory tools, no auto-recall/-save
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    trust: Literal["trusted", "untrusted"] = "trusted"
    timeout_s: float = Field(default=30, gt=0)
    # Defaults of the recall card's switches (a tap in /connectors overrides them).
    auto_recall: bool = True
    auto_save: bool = True
    memory_tools: bool = True

    @model_validator(mode="after")
    def _one_transport(self) -> RecallSettings:
        if self.url and self.command:
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
    model_config = SettingsConfigDict(
        env_prefix="PALUI_", extra="forbid", frozen=True, env_nested_delimiter="__"
    )

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
    http_port: int = Field(default=8080, ge=0, le=65535)  # 0: any free port
    log_format: Literal["console", "json"] = "console"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    timezone: str = "UTC"  # the person's: jobs' schedules are read in it
    jobs_may_create_jobs: bool = False  # may a job's run call palui__schedule_job?
    job_sync_s: float = Field(default=30, gt=0)  # how often jobs are reloaded from the database

    max_steps: int = Field(default=12, ge=1)
    turn_timeout_s: float = Field(default=120, gt=0)
    max_tools: int = Field(default=30, ge=0)
    daily_token_cap: int = Field(default=2_000_000, ge=0)  # 0 = off
    runs_per_hour: int = Field(default=60, ge=0)  # 0 = off
    daily_send_cap: int = Field(default=100, ge=0)  # 0 = unlimited
    min_job_interval_s: int = Field(default=60, ge=1)
    job_daily_token_cap: int = Field(default=100_000, ge=1)  # a job's own cap, unless set lower
    job_misfire_grace_s: int = Field(default=3600, ge=0)  # a run missed longer ago is not run
    approval_ttl_s: int = Field(default=86_400, ge=60)
    history_messages: int = Field(default=30, ge=1)
    compact_after: int = Field(default=40, ge=2)  # past this many messages, summarise the rest
    webhook_max_bytes: int = Field(default=1_048_576, ge=1)
    webhook_rate_per_min: int = Field(default=60, ge=0)  # per webhook; 0 = off

    mcp: dict[str, McpServerSettings] = Field(default_factory=dict)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    webhooks: dict[str, WebhookSettings] = Field(default_factory=dict)
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    guards: dict[str, ToolGuardSettings] = Field(default_factory=dict)

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

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA time zone (e.g. Europe/Lisbon)") from None
        return value

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

    @field_validator("webhooks")
    @classmethod
    def _check_webhook_names(cls, value: dict[str, WebhookSettings]) -> dict[str, WebhookSettings]:
        for name in value:
            if not WEBHOOK_NAME_RE.match(name):
                raise ValueError(
                    f"[webhooks.{name}]: a webhook name may hold only letters, digits, _ and -"
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
        found += [secret for hook in self.webhooks.values() if (secret := hook.secret())]
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
            if field in ("hooks", "recall"):  # a plain table: [hooks] pre = [...]
                section = f"[{field}] {'.'.join(loc[1:])}"
            message = error["msg"].removeprefix("Value error, ")
            raise ConfigError(f"{section} in {path}: {message}.") from None
        if error["type"] == "extra_forbidden":
            raise ConfigError(f"{path}: unknown key {field!r}. Check the spelling.") from None
        message = error["msg"].removeprefix("Value error, ")
        where = _where(field, environ, path, file_values)
        hint = FIX_HINTS.get(field, "")
        raise ConfigError(f"{where}: {message}. {hint}".rstrip()) from None
