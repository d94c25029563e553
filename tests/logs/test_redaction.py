"""No secret reaches a log line: every configured one (tokens, keys, webhook secrets, MCP/recall
header and env values, database passwords, provider keys in the environment), the shapes of
secrets nobody configured (access_token=, key=, password=, Authorization: Bearer, URL
passwords), and an MCP server's stderr, which goes through the same redactor."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from palui.cli.doctor import run_doctor
from palui.config import McpServerSettings, Settings
from palui.connectors import McpConnector
from palui.logs import REDACTED, Redactor, configure_logging, get_logger
from tests.toolkit import SERVERS

CHATTY_SERVER = SERVERS / "chatty_server.py"

TELEGRAM_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
MODEL_KEY = "model-key-4f9a1c2e"
WEBHOOK_SECRET = "hook-secret-0123456789abcdef"
TELEGRAM_WEBHOOK_SECRET = "tg-webhook-secret-5566778899"
MCP_HEADER = "mcp-header-token-77aa"
MCP_ENV = "mcp-env-value-88bb"
RECALL_HEADER = "recall-header-99cc"
RECALL_ENV = "recall-env-value-11dd"
DB_PASSWORD = "db-pass-w0rd"
OPENAI_KEY = "openai-env-key-2233"
ANTHROPIC_KEY = "anthropic-env-key-4455"
OTHER_KEYS = {
    "GROQ_API_KEY": "groq-env-key-6677",
    "HF_TOKEN": "hf-env-token-8899",
    "SERVICE_CLIENT_SECRET": "client-secret-0011",
    "SMTP_PASSWORD": "smtp-password-2233",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-4455aa",
}


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("CI_HOOK_VALUE", WEBHOOK_SECRET)  # a name that says nothing: config does
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    for name, value in OTHER_KEYS.items():
        monkeypatch.setenv(name, value)
    return Settings(
        telegram_token=TELEGRAM_TOKEN,
        model_api_key=MODEL_KEY,
        telegram_webhook_secret=TELEGRAM_WEBHOOK_SECRET,
        database_url=f"postgresql+asyncpg://palui:{DB_PASSWORD}@db.internal:5432/palui",
        webhooks={"ci": {"chat_id": 1, "secret_env": "CI_HOOK_VALUE"}},
        mcp={
            "web": {"url": "https://mcp.example.org/mcp", "headers": {"X-Auth": MCP_HEADER}},
            "notes": {"command": "notes-server", "env": {"NOTES_CREDENTIAL": MCP_ENV}},
        },
        recall={
            "url": "https://recall.example.org/mcp",
            "headers": {"Authorization": f"Bearer {RECALL_HEADER}"},
            "env": {"RECALL_SETTING": RECALL_ENV},
        },
    )


CONFIGURED = [
    TELEGRAM_TOKEN,
    MODEL_KEY,
    WEBHOOK_SECRET,
    TELEGRAM_WEBHOOK_SECRET,
    MCP_HEADER,
    MCP_ENV,
    RECALL_HEADER,
    RECALL_ENV,
    DB_PASSWORD,
    OPENAI_KEY,
    ANTHROPIC_KEY,
    *OTHER_KEYS.values(),
]


@pytest.mark.parametrize("secret", CONFIGURED)
def test_every_configured_secret_is_redacted_wherever_it_appears(
    settings: Settings, secret: str
) -> None:
    line = f"failed: upstream said ({secret}) twice {secret}."
    assert (
        Redactor(settings.secrets()).scrub(line)
        == f"failed: upstream said ({REDACTED}) twice {REDACTED}."
    )


def test_a_bearer_header_value_is_redacted_also_without_its_scheme(settings: Settings) -> None:
    scrub = Redactor(settings.secrets()).scrub
    assert scrub(f"sent Bearer {RECALL_HEADER}") == f"sent {REDACTED}"
    assert scrub(f"token {RECALL_HEADER} refused") == f"token {REDACTED} refused"


def test_a_percent_encoded_database_password_is_redacted_in_both_spellings() -> None:
    settings = Settings(database_url="postgresql://palui:p%40ss%2Fw0rd@db/palui")
    scrub = Redactor(settings.secrets()).scrub
    assert scrub("with p%40ss%2Fw0rd") == f"with {REDACTED}"
    assert scrub("with p@ss/w0rd") == f"with {REDACTED}"


def test_only_environment_variables_named_like_credentials_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOME_TOOL_HOME", "/opt/some-tool")
    monkeypatch.setenv("PWD", "/srv/palui-work")
    monkeypatch.setenv("REDIS_URL", "redis://:redis-pass-42@cache:6379/0")
    secrets = Settings().secrets()
    assert "/opt/some-tool" not in secrets
    assert "/srv/palui-work" not in secrets
    assert "redis-pass-42" in secrets


def test_short_configured_values_are_left_to_the_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEBUG_TOKEN", "1")
    settings = Settings(mcp={"x": {"command": "x", "env": {"LEVEL": "warn"}}})
    assert "1" not in settings.secrets()
    assert "warn" not in settings.secrets()


@pytest.mark.parametrize(
    ("line", "redacted"),
    [
        (
            "GET https://graph.example.com/me?access_token=EAAB12x&fields=id",
            f"GET https://graph.example.com/me?access_token={REDACTED}&fields=id",
        ),
        (
            "GET https://maps.example.com/api?key=AbCdEf123",
            f"GET https://maps.example.com/api?key={REDACTED}",
        ),
        ("calling with api_key=abc123xyz", f"calling with api_key={REDACTED}"),
        ("login password=hunter2 user=ana", f"login password={REDACTED} user=ana"),
        ("client_secret=shh-its-secret&x=1", f"client_secret={REDACTED}&x=1"),
        ("Authorization: Bearer abc.def.ghi", f"Authorization: Bearer {REDACTED}"),
        ("authorization: Basic dXNlcjpwYXNz", f"authorization: Basic {REDACTED}"),
        ("{'Authorization': 'tok-123'}", f"{{'Authorization': '{REDACTED}'}}"),
        ("headers X-Api-Key: k-9f8e7d", f"headers X-Api-Key: {REDACTED}"),
        ('{"api_key": "k-9f8e7d", "n": 1}', f'{{"api_key": "{REDACTED}", "n": 1}}'),
        (
            "can't reach postgresql+asyncpg://palui:pw@db:5432/palui",
            f"can't reach postgresql+asyncpg://palui:{REDACTED}@db:5432/palui",
        ),
        ("redis://:s3cr3t@cache:6379", f"redis://:{REDACTED}@cache:6379"),
        ("key sk-ant-api03-abcdefghijklmnop", f"key {REDACTED}"),
        ("bot /bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe", f"bot /bot{REDACTED}/getMe"),
        ("push with ghp_abcdefghijklmnopqrstuvwx1234", f"push with {REDACTED}"),
    ],
)
def test_secret_shapes_are_redacted_without_being_configured(line: str, redacted: str) -> None:
    assert Redactor().scrub(line) == redacted


@pytest.mark.parametrize(
    "line",
    [
        "max_tokens=1024 prompt_tokens: 12",
        "monkey=banana",
        "https://example.org:8443/path@v2",
        "connector mcp-notes__search: 3 results",
        "postgresql+asyncpg://palui@db/palui",
    ],
)
def test_ordinary_text_is_left_alone(line: str) -> None:
    assert Redactor().scrub(line) == line


def lines_of(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_secrets_never_reach_a_real_log_line_of_palui_or_a_library(settings: Settings) -> None:
    stream = io.StringIO()
    configure_logging("json", "info", settings.secrets(), stream=stream)
    log = get_logger("palui.test")
    for secret in CONFIGURED:
        log.warning("upstream_failed", error=f"401 for {secret}", detail={"body": [secret]})
        logging.getLogger("some.library").warning("retrying with %s", secret)
    log.info("fetching", url="https://x.example/cb?access_token=abc123&key=zz9")
    try:
        raise RuntimeError(f"connect to postgresql://u:{DB_PASSWORD}@h/db failed")
    except RuntimeError:
        log.exception("db_failed")
    out = stream.getvalue()
    for secret in [*CONFIGURED, "abc123", "zz9"]:
        assert secret not in out, secret
    records = lines_of(stream)
    assert records[0]["error"] == f"401 for {REDACTED}"
    assert records[0]["level"] == "warning"


async def test_a_stdio_servers_stderr_lines_reach_the_log_redacted() -> None:
    key = "chatty-api-key-5a6b7c8d"
    server = McpServerSettings(
        command=sys.executable, args=(str(CHATTY_SERVER),), env={"CHATTY_API_KEY": key}
    )
    stream = io.StringIO()
    configure_logging("json", "info", Settings(mcp={"chatty": server}).secrets(), stream=stream)
    connector = McpConnector("chatty", server)
    await connector.start()
    try:
        await connector.wait_settled()
        assert (await connector.call("ping", {})).text == "pong"
    finally:
        await connector.stop()  # the server is gone: its last lines are in the log
    stderr = [r for r in lines_of(stream) if r["event"] == "mcp_server_stderr"]
    assert [(r["connector"], r["line"]) for r in stderr] == [
        ("mcp-chatty", f"chatty: starting with key {REDACTED}"),
        ("mcp-chatty", f"chatty: GET https://api.example.org/v1?access_token={REDACTED}"),
        ("mcp-chatty", "ping called"),
    ]
    assert key not in stream.getvalue()
    assert "tok3nValue9" not in stream.getvalue()


async def test_doctor_prints_no_secret_a_server_wrote_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "chatty-api-key-9e8d7c6b"
    config = tmp_path / "palui.toml"
    config.write_text(
        f'[mcp.chatty]\ncommand = "{sys.executable}"\nargs = ["{CHATTY_SERVER}"]\n'
        f'env = {{ CHATTY_API_KEY = "{key}" }}\n\n[recall]\nenabled = false\n',
        encoding="utf-8",
    )
    out = io.StringIO()
    await run_doctor(config, out)
    assert "✅ mcp-chatty: connected, 1 tools" in out.getvalue()
    captured = capsys.readouterr()
    assert key not in captured.out + captured.err + out.getvalue()
    assert "tok3nValue9" not in captured.out + captured.err
