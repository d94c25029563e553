"""The declared webhooks (`[webhooks.<name>]`) with their secrets, checked when Palui starts.

Every secret must be set, and be long enough to resist guessing, before anything starts: also
when Palui listens on loopback, since a reverse proxy in front (the usual set-up for Telegram
webhook mode) exposes it all the same. Webhooks are DESIGN §1.9: the HTTP side lives in
`palui.http.server`, the stored deliveries in `palui.db.webhooks`, the summarising turn in
`palui.turns`.
"""

from __future__ import annotations

from dataclasses import dataclass

from palui.config import Settings
from palui.errors import ConfigError

MIN_SECRET_CHARS = 16
MAKE_ONE = "e.g. the output of `openssl rand -hex 32`"


@dataclass(frozen=True, slots=True)
class WebhookSpec:
    name: str
    chat_id: int
    secret: str
    instructions: str = ""
    topic_id: int = 0  # a topic of the chat (palui.domain.Conversation); 0: the chat itself


def load_webhooks(settings: Settings) -> dict[str, WebhookSpec]:
    """The declared webhooks with their secrets; ConfigError names what is missing and where.

    Also refuses a secret shorter than MIN_SECRET_CHARS, whatever PALUI_HTTP_HOST is.
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
        if len(secret) < MIN_SECRET_CHARS:
            raise ConfigError(
                f"[webhooks.{name}] secret_env{where}: the secret in {hook.secret_env} is "
                f"{len(secret)} characters; it needs at least {MIN_SECRET_CHARS}. Set "
                f"{hook.secret_env} to a long random string ({MAKE_ONE}) and give the sender "
                "the same one."
            )
        specs[name] = WebhookSpec(
            name, hook.chat_id, secret, hook.instructions.strip(), hook.topic_id
        )
    if settings.telegram_webhook_url and settings.telegram_webhook_secret is None:
        raise ConfigError(
            "PALUI_TELEGRAM_WEBHOOK_SECRET is not set; it is required when "
            "PALUI_TELEGRAM_WEBHOOK_URL is set (Telegram sends it back with every update). "
            "Set it to a random string of letters, digits, _ and -."
        )
    token = settings.telegram_webhook_secret
    if token is not None and len(token.get_secret_value()) < MIN_SECRET_CHARS:
        raise ConfigError(
            f"PALUI_TELEGRAM_WEBHOOK_SECRET is {len(token.get_secret_value())} characters; it "
            f"needs at least {MIN_SECRET_CHARS}. Set it to a long random string of letters, "
            f"digits, _ and - ({MAKE_ONE})."
        )
    return specs
