"""The declared webhooks (`[webhooks.<name>]`) with their secrets, checked when Palui starts.

Every secret must be set before anything starts; listening beyond loopback also needs Telegram's
webhook secret and secrets long enough to resist guessing. Webhooks are DESIGN §1.9: the HTTP
side lives in `palui.http.server`, the stored deliveries in `palui.db.webhooks`, the summarising
turn in `palui.turns`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from palui.config import Settings
from palui.errors import ConfigError

MIN_EXPOSED_SECRET_CHARS = 16


@dataclass(frozen=True, slots=True)
class WebhookSpec:
    name: str
    chat_id: int
    secret: str
    instructions: str = ""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name or a wildcard: reachable from elsewhere


def load_webhooks(settings: Settings) -> dict[str, WebhookSpec]:
    """The declared webhooks with their secrets; ConfigError names what is missing and where.

    Also refuses a set-up that would expose the HTTP server beyond this machine without secrets.
    """
    where = f" in {settings.config}" if settings.config else ""
    specs: dict[str, WebhookSpec] = {}
    for name, hook in settings.webhooks.items():
        secret = hook.secret()
        if secret is None:
            raise ConfigError(
                f"[webhooks.{name}] secret_env{where}: the environment variable "
                f"{hook.secret_env} is not set. Set it to the secret the sender signs with."
            )
        specs[name] = WebhookSpec(name, hook.chat_id, secret, hook.instructions.strip())
    if settings.telegram_webhook_url and settings.telegram_webhook_secret is None:
        raise ConfigError(
            "PALUI_TELEGRAM_WEBHOOK_SECRET is not set; it is required when "
            "PALUI_TELEGRAM_WEBHOOK_URL is set (Telegram sends it back with every update). "
            "Set it to a random string of letters, digits, _ and -."
        )
    if not is_loopback(settings.http_host):
        _check_exposed(settings, specs)
    return specs


def _check_exposed(settings: Settings, specs: Mapping[str, WebhookSpec]) -> None:
    host = settings.http_host
    weak = [name for name, spec in specs.items() if len(spec.secret) < MIN_EXPOSED_SECRET_CHARS]
    if weak:
        raise ConfigError(
            f"PALUI_HTTP_HOST is {host}, reachable from other machines, but the secret of "
            f"webhook {weak[0]!r} is shorter than {MIN_EXPOSED_SECRET_CHARS} characters. "
            "Use a long random secret, or keep PALUI_HTTP_HOST=127.0.0.1."
        )
    token = settings.telegram_webhook_secret
    if token is not None and len(token.get_secret_value()) < MIN_EXPOSED_SECRET_CHARS:
        raise ConfigError(
            f"PALUI_HTTP_HOST is {host}, reachable from other machines, but "
            f"PALUI_TELEGRAM_WEBHOOK_SECRET is shorter than {MIN_EXPOSED_SECRET_CHARS} "
            "characters. Use a long random secret, or keep PALUI_HTTP_HOST=127.0.0.1."
        )
