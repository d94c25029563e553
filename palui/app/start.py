"""`palui run`'s start, in two steps, so Telegram is polled within a second or two of the
process's start and nothing sent meanwhile waits on the rest of Palui loading:

1. the database is migrated (a plain revision check when it is at head), the bot is asked who
   it is, and Telegram is polled into the early inbox (`palui.chat.early_inbox`), which stores
   what comes; this needs only the settings, the database and the Telegram adapter;
2. the rest (the chat engine, MCP, the web console: about as much again of imports) is
   imported in a thread while the event loop keeps polling, then built and started as
   `Palui`; the chats then take up what was stored, and turns wait for the model layer
   (`palui.llm`: for a provider outside OpenAI's format, the litellm import and its rehearsal)
   to be ready.

Part of the composition root. A test's `Palui` (no `run`) takes in the same way, from
`Palui.serve_telegram`, after its parts are built.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from palui.channels.ratelimit import SendLimits, SendRateLimiter
from palui.channels.telegram import TelegramChannel
from palui.chat.early_inbox import EarlyInbox
from palui.config import Settings
from palui.db import Database, Store
from palui.observe import Metrics
from palui.observe.process import StartUp

if TYPE_CHECKING:
    from palui.app.root import Palui


@dataclass(frozen=True, slots=True)
class Intake:
    """What is up before the rest of Palui: the bot, and the early inbox it polls into (None
    in webhook mode: Telegram's posts are taken once the HTTP server listens)."""

    telegram: TelegramChannel
    inbox: EarlyInbox | None
    metrics: Metrics  # the Telegram adapter counts into them from the first poll
    start_up: StartUp


def telegram_channel(
    settings: Settings, metrics: Metrics, store: Store, limits: SendLimits | None
) -> TelegramChannel:
    """The bot, sending within `limits` (Telegram's own unless given)."""
    assert settings.telegram_token is not None
    return TelegramChannel(
        settings.telegram_token.get_secret_value(),
        settings.telegram_api_url,
        limiter=SendRateLimiter(limits),
        stream_replies=settings.stream_replies,
        metrics=metrics,
        conversations=store.topics,  # each topic its own conversation
    )


async def take_in(
    settings: Settings,
    store: Store,
    metrics: Metrics,
    start_up: StartUp,
    limits: SendLimits | None = None,
) -> Intake:
    """The bot up and, unless in webhook mode, Telegram polled into an early inbox."""
    telegram = telegram_channel(settings, metrics, store, limits)
    await telegram.initialize()
    if settings.telegram_webhook_url and settings.telegram_webhook_secret:
        return Intake(telegram, None, metrics, start_up)
    inbox = EarlyInbox(store, telegram, settings.allowed_users)
    try:
        await telegram.start_polling(inbox)  # the command menu once the commands are built
    except BaseException:
        await telegram.close()
        raise
    start_up.polling()
    return Intake(telegram, inbox, metrics, start_up)


async def run(settings: Settings, stop: asyncio.Event) -> None:
    """`palui run` until `stop` is set."""
    refusals(settings)
    store = Store(Database(settings.resolved_database_url))
    try:
        await store.db.migrate()
        intake = await take_in(settings, store, Metrics(), StartUp())
    except BaseException:
        await store.db.close()
        raise
    try:
        palui = await asyncio.to_thread(_the_rest)
        app = palui(settings, store=store, intake=intake)  # may refuse the settings (hooks…)
    except BaseException:
        await intake.telegram.close()
        await store.db.close()
        raise
    async with app:
        await app.serve_telegram(stop)


def refusals(settings: Settings) -> None:
    """What the configuration can still refuse once it is read (ConfigError: a hook that can't
    be imported, a guard's bad pattern, a webhook without its secret), checked before Telegram
    or the database is touched, so bad input changes nothing and says why even when Telegram
    can't be reached. Only what is configured is loaded: a plain start pays nothing."""
    if settings.hooks.pre or settings.hooks.post or settings.guards:
        from palui.tools.rules import ToolRules

        ToolRules.from_settings(settings)
    if settings.webhooks:
        from palui.webhooks.specs import load_webhooks

        load_webhooks(settings)


def _the_rest() -> type[Palui]:
    # Everything else Palui is made of, imported here, in a thread, once Telegram is polled:
    # the event loop keeps storing what comes while these load (seconds on a busy machine).
    from palui.app.root import Palui

    return Palui
