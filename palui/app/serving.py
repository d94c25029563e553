"""What `palui run` serves besides the chats: the HTTP server (webhooks,
health, metrics, the web console, OAuth callbacks, Telegram's webhook mode)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from palui.app.assembly import Running
from palui.app.observing import secret
from palui.app.remote import oauth_routes
from palui.channels.telegram import TelegramChannel
from palui.http import HttpServer, TelegramWebhook
from palui.web.routes import console_app
from palui.webhooks.specs import WebhookSpec

if TYPE_CHECKING:
    from palui.app.root import Palui


def http_server(
    app: Palui,
    running: Running,
    telegram: TelegramChannel | None,
    webhooks: dict[str, WebhookSpec],
) -> HttpServer:
    s = app.settings
    telegram_webhook = None
    if telegram is not None and s.telegram_webhook_url and s.telegram_webhook_secret:
        telegram_webhook = TelegramWebhook(
            s.telegram_webhook_secret.get_secret_value(),
            functools.partial(telegram.feed, running.chats.inbox),
        )
    return HttpServer(
        app.store,
        host=s.http_host,
        port=s.http_port,
        webhooks=webhooks,
        on_webhook_stored=running.wakeups.webhook_stored,
        telegram=telegram_webhook,
        connectors=lambda: [toolset.status() for toolset in app.registry.toolsets],
        max_bytes=s.webhook_max_bytes,
        rate_per_min=s.webhook_rate_per_min,
        console=console_app(running.web),
        trusted_proxies=s.http_trusted_proxies,
        oauth=oauth_routes(app.remote),
        process=app.start_up,
        metrics=app.metrics,
        metrics_token=secret(s.http.metrics_token),
    )
