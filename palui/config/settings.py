"""`Settings`: every value Palui runs with, each under one name (`PALUI_<NAME>` in the
environment, which wins over palui.toml), checked as it is read.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from palui.config.secrets import configured_secrets
from palui.config.sections import (
    GroupsSettings,
    HooksSettings,
    HttpSettings,
    McpServerSettings,
    MediaSettings,
    RecallSettings,
    RetentionSettings,
    RunCodeSettings,
    ToolGuardSettings,
    WebhookSettings,
    WebSettings,
    destination_patterns,
)
from palui.errors import ConfigError

TELEGRAM_API_URL = "https://api.telegram.org"

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
    "http_trusted_proxies": (
        "List your reverse proxies' addresses or networks, comma-separated "
        "(e.g. 10.0.0.5, 172.16.0.0/12), or leave it unset when nothing sits in front of Palui."
    ),
}

SQLITE_PREFIXES = {"sqlite://": "sqlite+aiosqlite://", "sqlite+aiosqlite://": "sqlite+aiosqlite://"}
POSTGRES_PREFIXES = {
    "postgres://": "postgresql+asyncpg://",
    "postgresql://": "postgresql+asyncpg://",
    "postgresql+asyncpg://": "postgresql+asyncpg://",
}


SLUG_RE = re.compile(r"^[a-z0-9-]+$")
WEBHOOK_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MODEL_TOOL_NAME_LIMIT = 64  # the longest function name the model APIs accept


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
    # Every model through litellm, even those Palui calls directly (palui.llm.openai_http).
    model_via_litellm: bool = False
    stream_replies: bool = True
    # Whether the model accepts images; None: as litellm's model map says (palui.media.photos).
    model_vision: bool | None = None
    # Voice notes and audio (palui.media.voice); api base and key default to the model's.
    transcription_model: str | None = None
    transcription_api_base: str | None = None
    transcription_api_key: SecretStr | None = None
    # Voice replies to voice notes (palui.llm.speech); api base and key default to the model's.
    tts_model: str | None = None
    tts_api_base: str | None = None
    tts_api_key: SecretStr | None = None
    tts_voice: str = "alloy"
    # The models a person may choose with /model (empty: only `model`).
    models: Annotated[tuple[str, ...], NoDecode] = ()

    kinds_file: Path = Path("config/tool_kinds.yaml")  # read when it exists
    database_url: str | None = None
    data_dir: Path = Path("data")
    config: Path | None = None
    # Skills (palui.skills): folders with a SKILL.md; None: `skills/` beside palui.toml.
    skills_dir: Path | None = None

    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=0, le=65535)  # 0: any free port
    # Reverse proxies whose X-Forwarded-For names the client (palui.http.clients); empty: the
    # TCP peer is the client, and no forwarded-for header is believed.
    http_trusted_proxies: Annotated[
        tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...], NoDecode
    ] = ()
    web_url: str | None = None  # the public base of the console's sign-in links
    # Encrypts connectors' OAuth tokens at rest; unset: a 0600 key file in the data dir.
    secret_key: SecretStr | None = None
    otel_endpoint: str | None = None  # OTLP/HTTP traces go there (e.g. …:4318/v1/traces)
    log_format: Literal["console", "json"] = "console"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    timezone: str = "UTC"  # the person's: jobs' schedules are read in it
    jobs_may_create_jobs: bool = False  # may a job's run call palui__schedule_job?
    job_sync_s: float = Field(default=30, gt=0)  # how often jobs are reloaded from the database
    # How long a chat's lease outlives its holder's last renewal (renewed every third of it,
    # at most every 15 s): a process that died or stalled is taken over after this long.
    lease_ttl_s: float = Field(default=60, ge=2)

    max_steps: int = Field(default=12, ge=1)
    turn_timeout_s: float = Field(default=120, gt=0)
    max_tools: int = Field(default=30, ge=0)
    daily_token_cap: int = Field(default=2_000_000, ge=0)  # 0 = off
    runs_per_hour: int = Field(default=60, ge=0)  # 0 = off
    daily_send_cap: int = Field(default=100, ge=0)  # 0 = unlimited
    # Full tool names that send from the person's own mailbox: the send cap doesn't count them.
    send_cap_exempt: Annotated[frozenset[str], NoDecode] = frozenset()
    min_job_interval_s: int = Field(default=60, ge=1)
    job_daily_token_cap: int = Field(default=100_000, ge=1)  # a job's own cap, unless set lower
    job_misfire_grace_s: int = Field(default=3600, ge=0)  # a run missed longer ago is not run
    approval_ttl_s: int = Field(default=86_400, ge=60)
    history_messages: int = Field(default=30, ge=1)
    compact_after: int = Field(default=40, ge=2)  # past this many messages, summarise the rest
    webhook_max_bytes: int = Field(default=1_048_576, ge=1)
    webhook_rate_per_min: int = Field(default=60, ge=0)  # per webhook; 0 = off
    # Where a tainted turn may send out without a card, beside what the person named.
    allowed_destinations: Annotated[tuple[str, ...], NoDecode] = ()

    mcp: dict[str, McpServerSettings] = Field(default_factory=dict)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    webhooks: dict[str, WebhookSettings] = Field(default_factory=dict)
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    guards: dict[str, ToolGuardSettings] = Field(default_factory=dict)
    run_code: RunCodeSettings = Field(default_factory=RunCodeSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    groups: GroupsSettings = Field(default_factory=GroupsSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)  # [http] in palui.toml

    media: MediaSettings = Field(default_factory=MediaSettings)

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

    @field_validator("send_cap_exempt", mode="before")
    @classmethod
    def _split_exempt(cls, value: Any) -> Any:
        return _comma_list(value)

    @field_validator("fallback_models", "models", mode="before")
    @classmethod
    def _split_models(cls, value: Any) -> Any:
        return _comma_list(value)

    @property
    def choosable_models(self) -> tuple[str, ...]:
        """What /model offers: PALUI_MODELS, else only PALUI_MODEL (the default comes first)."""
        default = (self.model,) if self.model else ()
        return tuple(dict.fromkeys((*default, *self.models))) if self.models else default

    @field_validator("http_trusted_proxies", mode="before")
    @classmethod
    def _parse_proxies(cls, value: Any) -> Any:
        networks = []
        for part in _comma_list(value) or ():
            try:
                networks.append(ipaddress.ip_network(str(part).strip()))
            except ValueError:
                raise ValueError(
                    f"{part!r} is not an address or a network (CIDR, with no host bits set)"
                ) from None
        return tuple(networks)

    @field_validator("allowed_destinations", mode="before")
    @classmethod
    def _check_destinations(cls, value: Any) -> Any:
        return destination_patterns(value)

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
    def resolved_skills_dir(self) -> Path:
        if self.skills_dir is not None:
            return self.skills_dir
        # Beside palui.toml (config/, where it is looked for when PALUI_CONFIG is unset).
        return (self.config.parent if self.config is not None else Path("config")) / "skills"

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
        """Every secret value, for log redaction (palui.config.secrets says which)."""
        return configured_secrets(self)


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
