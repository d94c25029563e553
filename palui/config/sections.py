"""The palui.toml sections that only make sense in a file: `[mcp.<slug>]`, `[recall]`,
`[webhooks.<name>]`, `[hooks]`, `[guards."<tool>"]` and `[media]`. Each is a frozen pydantic
model that refuses unknown keys, so a typo is a config error rather than a silently ignored
setting. Also the check of `[limits] allowed_destinations`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator


class McpToolSettings(BaseModel):
    """`[mcp.<slug>.tools.<tool>]`: how Palui treats one of the server's tools."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Every call opens ✏️ Edit's questions, the model's values prefilled, before it can run.
    form: bool = False


class McpServerSettings(BaseModel):
    """One `[mcp.<slug>]` section: an MCP server over stdio (command) or streamable HTTP (url)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    # How Palui signs in to a url server: "oauth" (a person signs in with /connect), "headers"
    # (only the fixed headers), or unset: OAuth when the server answers with an OAuth challenge
    # and no Authorization header is configured.
    auth: Literal["oauth", "headers"] | None = None
    client_id: str | None = None  # an OAuth client registered by hand at the server
    scopes: str | None = None  # the OAuth scopes to ask for; unset: what the server advertises
    trust: Literal["trusted", "untrusted"] = "untrusted"
    timeout_s: float = Field(default=30, gt=0)
    paused: bool = False
    # What runs without a card in a clean chat turn (`palui.policy.matrix.Width`); a person
    # may choose another on /connectors.
    allow: Literal["reads", "writes", "all"] = "writes"
    enable: tuple[str, ...] = ()  # globs of tools switched on
    disable: tuple[str, ...] = ()  # globs of tools switched off (wins over enable)
    tools: dict[str, McpToolSettings] = Field(default_factory=dict)  # by the server's tool name

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if bool(self.command) == bool(self.url):
            raise ValueError("set either command (stdio) or url (streamable HTTP), not both")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.command and (self.auth == "oauth" or self.client_id):
            raise ValueError("OAuth sign-in (auth, client_id) needs a url server")
        return self

    @property
    def may_sign_in(self) -> bool:
        """Whether a person may sign this server in with OAuth (`/connect`)."""
        if not self.url or self.auth == "headers":
            return False
        has_authorization = any(name.lower() == "authorization" for name in self.headers)
        return self.auth == "oauth" or not has_authorization


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


ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class WebhookSettings(BaseModel):
    """One `[webhooks.<name>]` section: where its summaries go and where its secret lives."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chat_id: int
    topic_id: int = 0  # a topic of the chat (its message_thread_id); 0: the chat itself
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


class RunCodeSettings(BaseModel):
    """`[run_code]`: the built-in `palui__run_code`, Python run in a bubblewrap sandbox
    (palui.sandbox). Off unless `enabled`; not offered where the sandbox can't be set up."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    bwrap: str = "bwrap"  # bubblewrap: a path, or a name looked up on PATH
    python: str = "python3"  # the interpreter inside the sandbox (from the read-only /usr)
    timeout_seconds: float = Field(default=30, gt=0, le=300)
    memory_mb: int = Field(default=512, ge=64, le=65_536)  # all of a run's processes together
    processes: int = Field(default=8, ge=4, le=1_024)  # processes and threads at once
    output_chars: int = Field(default=8_000, ge=200, le=16_000)


DESTINATION_PATTERN_RE = re.compile(r"^[^\s,]+$")


def destination_patterns(value: Any) -> tuple[str, ...]:
    """`[limits] allowed_destinations`: host globs (`example.org`, `*.example.org`), e-mail globs
    (`*@mycompany.com`), phone numbers or chat ids (`+351*`, `-100123456789`, `@handle`); a
    comma-separated string in the environment (PALUI_ALLOWED_DESTINATIONS)."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list | tuple):
        raise ValueError('must be a list, e.g. ["example.org", "*@mycompany.com"]')
    patterns = []
    for item in value:
        if not isinstance(item, str) or not DESTINATION_PATTERN_RE.match(item.strip()):
            raise ValueError(f"{item!r} is not a destination (a host, *@domain, or a number)")
        if item.strip().strip("*?.@") == "":
            raise ValueError(f"{item!r} would let everything through; name hosts or domains")
        patterns.append(item.strip().lower())
    return tuple(patterns)


class RetentionSettings(BaseModel):
    """`[retention]`: how many days each kind of finished record is kept before the daily prune
    deletes it (palui.db.retention); 0 keeps it forever. Nothing pending work still needs is
    ever deleted, however old. Turns, messages and summaries (the chat's memory) are not pruned."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    webhook_days: int = Field(default=7, ge=0)  # handled webhook deliveries (bodies up to 1 MiB)
    inbox_days: int = Field(default=30, ge=0)  # handled inbox rows
    outbox_days: int = Field(default=30, ge=0)  # sent replies
    calls_days: int = Field(default=90, ge=0)  # tool call records (their steps), recall checks
    model_calls_days: int = Field(default=90, ge=0)  # model calls (token use)
    approvals_days: int = Field(default=90, ge=0)  # decided cards, their edits, paused turns
    job_runs_days: int = Field(default=90, ge=0)  # finished job runs (a job's latest is kept)
    notices_days: int = Field(default=30, ge=0)  # stranger and send-cap notices, stop requests


class GroupsSettings(BaseModel):
    """`[groups]`: who may decide a card in a group chat. `allowed` (the default): any user in
    PALUI_ALLOWED_USERS; `requester`: only the person whose message started the turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    approver: Literal["allowed", "requester"] = "allowed"


class WebSettings(BaseModel):
    """`[web]`: the web console (palui.web). A session lasts `session_days` after sign-in."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_days: int = Field(default=7, ge=1, le=365)


class HttpSettings(BaseModel):
    """`[http]`: Palui's HTTP server's options read from the file. `metrics_token`: `GET /metrics`
    answers a request carrying it as a bearer token from anywhere (unset: loopback only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metrics_token: SecretStr | None = None


TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024  # the Bot API's getFile: larger files can't be fetched


class MediaSettings(BaseModel):
    """`[media]`: files people send (palui.media). A file past `max_bytes` is not downloaded
    (never past Telegram's 20 MB); a document's text past `max_document_chars` is cut, marked.
    A PDF is read in a child process (palui.media.child): no more than `max_document_pages`
    pages, killed after `document_timeout_s`, its address space capped at `document_memory_mb`;
    past a limit the person is told the file took too long or is too large."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_bytes: int = Field(default=TELEGRAM_DOWNLOAD_LIMIT, ge=1, le=TELEGRAM_DOWNLOAD_LIMIT)
    max_document_chars: int = Field(default=20_000, ge=100)
    max_document_pages: int = Field(default=200, ge=1)
    document_timeout_s: float = Field(default=8.0, gt=0, le=600)
    # Python and pypdf take ~50 MB of address space before reading a byte.
    document_memory_mb: int = Field(default=256, ge=128)
    # An answer to a voice note is also spoken (PALUI_TTS_MODEL) when it is no longer than this.
    voice_reply_chars: int = Field(default=600, ge=1)
