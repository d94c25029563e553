"""Every secret value Palui is configured with or finds in its environment, for the log redactor
(`palui.logs.Redactor` replaces each one wherever it appears in a log line).

What counts (DESIGN §1.11): the Telegram token, the model's and the transcription's API keys,
the Telegram-webhook and webhook secrets, every header and env value of the `[mcp.*]` servers
and of `[recall]` (a header is usually an Authorization, an env value often a key; a path
redacted now and then costs less than a key leaked), the password of the database URL, and
provider keys litellm reads from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, any
*_API_KEY, *_TOKEN, *_SECRET, *_PASSWORD...).
Values under MIN_LENGTH characters are left to the redactor's patterns: replacing every "1" or
"true" in every line would make the logs unreadable and hide nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from palui.config.sections import McpServerSettings, RecallSettings
    from palui.config.settings import Settings

MIN_LENGTH = 6

# Names of environment variables that hold credentials (PWD and OLDPWD are directories).
SECRET_ENV_NAME = re.compile(
    r"(?i)(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)$|SECRET"
)


def configured_secrets(settings: Settings, environ: Mapping[str, str] | None = None) -> list[str]:
    """Every secret of `settings` and of the environment, each at least MIN_LENGTH long."""
    env = os.environ if environ is None else environ
    keys = (
        settings.telegram_token,
        settings.model_api_key,
        settings.telegram_webhook_secret,
        settings.transcription_api_key,
        settings.tts_api_key,
        settings.secret_key,
        settings.http.metrics_token,
    )
    found = [key.get_secret_value() for key in keys if key is not None]
    found += [secret for hook in settings.webhooks.values() if (secret := hook.secret())]
    for server in settings.mcp.values():
        found += server_secrets(server)
    found += server_secrets(settings.recall)
    found += url_password(settings.resolved_database_url)
    found += environment_secrets(env)
    return _distinct(found)


def server_secrets(server: McpServerSettings | RecallSettings) -> Iterator[str]:
    """An MCP server's header and env values; of `Bearer <token>`, the token alone too."""
    for value in (*server.headers.values(), *server.env.values()):
        yield value
        scheme, _, credential = value.strip().partition(" ")
        if credential.strip() and scheme.isalpha():
            yield credential.strip()


def url_password(url: str) -> Iterator[str]:
    """The password of a URL (`postgresql://user:pw@host`), as written and decoded."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return
    if password:
        yield password
        yield unquote(password)


def environment_secrets(environ: Mapping[str, str]) -> Iterator[str]:
    """Values of variables named like credentials: provider keys litellm would use, tokens."""
    for name, value in environ.items():
        if name not in {"PWD", "OLDPWD"} and SECRET_ENV_NAME.search(name):
            yield value
        elif name.endswith(("_URL", "_URI", "_DSN")):
            yield from url_password(value)  # DATABASE_URL, REDIS_URL... with a password


def _distinct(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if len(v) >= MIN_LENGTH))
