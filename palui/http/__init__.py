"""Palui's own HTTP server: `server.HttpServer` (health, webhooks, Telegram's webhook mode, the
console mounted at `/ui`), `clients` (who sent a request, behind trusted proxies) and
`throttle` (failed authentications per client address)."""

from palui.http.server import HttpServer as HttpServer
from palui.http.server import TelegramWebhook as TelegramWebhook
from palui.http.throttle import FailureThrottle as FailureThrottle
