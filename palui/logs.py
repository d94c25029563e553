"""structlog set-up: console or JSON lines, chat/turn ids from context, secrets redacted.

Every record, Palui's own and those of the libraries below it (httpx logs request URLs, and the
Bot API puts the bot token in the URL), passes through `Redactor` before it is written.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable, MutableMapping
from typing import Any, TextIO

import structlog

REDACTED = "[redacted]"

_NAME = r"(?:[a-z0-9]+[_-])*"  # a prefix such as access_, client_, x-
# Shapes of secrets that may reach a log line even when we never configured them, each with what
# it is replaced by (the name before a value stays, so the line still says what was there).
SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<!\d)\d{5,}:[A-Za-z0-9_-]{30,}"), REDACTED),  # bot token, also in /bot<token>/
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),  # OpenAI / Anthropic API keys
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), REDACTED),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), REDACTED),  # Slack
    (re.compile(r"\b(?:AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35})\b"), REDACTED),  # AWS, Google
    # postgresql://user:password@host: the password, whatever its length
    (
        re.compile(r"(?i)\b(?P<keep>[a-z][a-z0-9+.-]*://[^\s/:@]*:)[^\s/@]+@"),
        rf"\g<keep>{REDACTED}@",
    ),
    # Authorization: Bearer <token> / Basic <...> / <token>, as a header or a dict's repr
    (
        re.compile(
            r"(?i)\b(?P<keep>(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
            r"(?:(?:bearer|basic|token|bot|digest)\s+)?)[^\s\"',;]+"
        ),
        rf"\g<keep>{REDACTED}",
    ),
    (re.compile(r"(?i)\b(?P<keep>bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), rf"\g<keep>{REDACTED}"),
    # access_token=..., key=..., api_key=..., password=... (query strings, key=value lines)
    (
        re.compile(
            rf"(?i)\b(?P<keep>{_NAME}(?:api[_-]?key|key|token|secret|password|passwd|pwd|pass"
            r"|signature|sig|credentials?|auth)[\"']?\s*=\s*[\"']?)[^&\s\"',;]+"
        ),
        rf"\g<keep>{REDACTED}",
    ),
    # "api_key": "...", X-Api-Key: ..., password: ... (JSON, headers)
    (
        re.compile(
            rf"(?i)(?P<keep>\b{_NAME}(?:api[_-]?key|token|secret|password|passwd|credentials?)"
            r"[\"']?\s*:\s*[\"']?)[^\s\"',;}]+"
        ),
        rf"\g<keep>{REDACTED}",
    ),
)
SECRET_KEYS = re.compile(r"(?i)(token|api_?key|secret|password|authorization)")
# What structlog adds itself: never a secret, and a short configured value (an env value that
# happens to read "warning") must not blank it.
STRUCTURAL_KEYS = frozenset({"level", "logger", "timestamp", "log_level"})


class Redactor:
    """A structlog processor that removes known secret values and secret-shaped strings."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        for pattern, replacement in SECRET_PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def _clean(self, key: str, value: Any) -> Any:
        if isinstance(value, str):
            if key in STRUCTURAL_KEYS:
                return value
            if SECRET_KEYS.search(key) and key not in {"token_usage", "tokens"}:
                return REDACTED
            return self.scrub(value)
        if isinstance(value, dict):
            return {k: self._clean(str(k), v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._clean(key, v) for v in value]
        if isinstance(value, BaseException):
            return self.scrub(repr(value))
        return value

    def __call__(self, logger: Any, method: str, event: MutableMapping[str, Any]) -> dict[str, Any]:
        return {k: self._clean(k, v) for k, v in event.items()}


def configure_logging(
    fmt: str = "console",
    level: str = "info",
    secrets: Iterable[str] = (),
    stream: TextIO | None = None,
) -> None:
    """Route structlog and the standard library's logging through one redacting pipeline."""
    redactor = Redactor(secrets)
    pre_chain: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *pre_chain,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=pre_chain,
            processors=[
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.format_exc_info,
                redactor,  # last before rendering, so nothing added later escapes it
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Chatty libraries: their request lines add nothing but noise (and URLs with tokens).
    for name in (
        "httpx",
        "httpcore",
        "telegram",
        "LiteLLM",
        "litellm",
        "aiosqlite",
        "mcp",
        "alembic",
        "apscheduler",  # a line per fire; the job scheduler logs claims itself
    ):
        logging.getLogger(name).setLevel(logging.WARNING)


def get_logger(name: str) -> Any:
    return structlog.stdlib.get_logger(name)


def bound(**ids: Any) -> Any:
    """Context manager: every log line inside carries these ids (chat_id, turn_id, ...)."""
    return structlog.contextvars.bound_contextvars(**ids)
