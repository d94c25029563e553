"""The composition root: builds every part from Settings and owns the start/stop order.

async with Palui(settings) as app:      # database migrated, tool settings loaded
    await app.serve_telegram(stop)      # connectors up, Telegram polled, until `stop` is set
"""

from __future__ import annotations

import asyncio
import functools
import sys
import time
from collections.abc import Callable, Mapping
from typing import TextIO

from palui.channels.console import ConsoleChannel
from palui.channels.telegram import TelegramChannel
from palui.chat.service import ChatService, ServiceInfo
from palui.config import Settings
from palui.connectors import ConnectorManager, ToolsChanged
from palui.connectors.recall import recall_server_settings
from palui.db import Database, Store
from palui.domain import RECALL_ID, ChatUser, Inbound
from palui.errors import ConfigError
from palui.http.server import HttpServer, TelegramWebhook
from palui.jobs.scheduler import JobScheduler
from palui.llm import LiteLLMModel
from palui.logs import get_logger
from palui.memory import MemoryConfig
from palui.memory.switches import SwitchState
from palui.policy.kinds_file import KindsFile, parse_kinds_file
from palui.ports import Channel
from palui.tools.builtins import BuiltinTools
from palui.tools.catalog import Globs, StoredTool, ToolCatalog
from palui.tools.registry import ToolRegistry
from palui.tools.rules import ToolRules
from palui.tools.watch import ToolWatch, load_catalog_state
from palui.turns.runner import Limits
from palui.webhooks.specs import WebhookSpec, load_webhooks

log = get_logger("palui.app")

CONSOLE_CHAT_ID = 0  # never a Telegram chat id
CONSOLE_USER = ChatUser(id=0, username="console")


def build_model(settings: Settings) -> LiteLLMModel:
    settings.require("model")
    assert settings.model is not None
    key = settings.model_api_key.get_secret_value() if settings.model_api_key else None
    return LiteLLMModel(
        settings.model,
        fallbacks=settings.fallback_models,
        api_base=settings.model_api_base,
        api_key=key,
        request_timeout=settings.model_timeout_s,
    )


def load_kinds(settings: Settings) -> KindsFile | None:
    path = settings.kinds_file
    if not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: can't be read ({exc.strerror}).") from None
    return parse_kinds_file(text, str(path))


def switch_globs(settings: Settings) -> dict[str, Globs]:
    return {
        f"mcp-{slug}": Globs(server.enable, server.disable) for slug, server in settings.mcp.items()
    }


# Recall's save and forget start switched on (forget always asks first: it is destructive).
RECALL_START_ON = frozenset({f"{RECALL_ID}__add_memory", f"{RECALL_ID}__forget_memory"})


def build_connectors(
    settings: Settings,
    on_tools_changed: ToolsChanged | None = None,
    *,
    recall_db: str | None = None,
) -> ConnectorManager:
    """Every `[mcp.*]` server, and recall unless memory is off (`palui kinds` uses it too)."""
    return ConnectorManager(
        settings.mcp, on_tools_changed=on_tools_changed,
        recall=recall_server_settings(settings, recall_db),
    )  # fmt: skip


def build_catalog(
    settings: Settings, kinds: KindsFile | None, stored: Mapping[str, StoredTool]
) -> ToolCatalog:
    """How every tool is classified and switched (`palui kinds` uses it too)."""
    return ToolCatalog(kinds, stored, switch_globs(settings), RECALL_START_ON)


def memory_config(settings: Settings) -> MemoryConfig:
    recall = settings.recall
    return MemoryConfig(
        defaults=SwitchState(recall.auto_recall, recall.auto_save, recall.memory_tools),
        history_messages=settings.history_messages,
        compact_after=settings.compact_after,
    )


class Palui:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.db = Database(settings.resolved_database_url)
        self.store = Store(self.db)
        self.model = build_model(settings)
        self.kinds = load_kinds(settings)
        self.connectors = build_connectors(settings, self._tools_changed)
        self.builtins = BuiltinTools(
            self.store, allowed_users=settings.allowed_users, timezone=settings.timezone,
            min_interval_s=settings.min_job_interval_s, job_token_cap=settings.job_daily_token_cap,
        )  # fmt: skip
        self.registry = ToolRegistry([*self.connectors.connectors(), self.builtins])
        self.jobs: JobScheduler | None = None  # running while a service runs
        self.catalog = build_catalog(settings, self.kinds, {})
        self.tool_rules = ToolRules.from_settings(settings)  # imports the hooks: fails early
        self._watch: ToolWatch | None = None
        self.http: HttpServer | None = None  # serving while `serve_telegram` runs
        self.service: ChatService | None = None  # likewise

    async def __aenter__(self) -> Palui:
        await self.db.migrate()
        stored = await load_catalog_state(self.store)
        self.catalog = build_catalog(self.settings, self.kinds, stored)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.connectors.stop()
        await self.db.close()

    async def _tools_changed(self, connector_id: str) -> None:
        toolset = self.connectors.get(connector_id)
        if self._watch is not None and toolset is not None:
            await self._watch.sync([toolset])

    def _service(self, channel: Channel, allowed_users: frozenset[int]) -> ChatService:
        s = self.settings
        return ChatService(
            self.store,
            self.model,
            channel,
            allowed_users=allowed_users,
            limits=Limits(
                max_steps=s.max_steps,
                turn_timeout_s=s.turn_timeout_s,
                history_messages=s.history_messages,
                daily_token_cap=s.daily_token_cap,
                runs_per_hour=s.runs_per_hour,
                max_tools=s.max_tools,
                tool_rules=self.tool_rules,
                jobs_may_create_jobs=s.jobs_may_create_jobs,
            ),
            info=ServiceInfo(
                model=self.model.name,
                fallbacks=tuple(s.fallback_models),
                database_kind=self.db.kind,
            ),
            registry=self.registry,
            catalog=self.catalog,
            approval_ttl_s=s.approval_ttl_s,
            memory=memory_config(s),
        )

    async def _start_jobs(self, service: ChatService) -> None:
        """The job scheduler, after the service (a due run is queued into its chat's worker)."""
        s = self.settings
        self.jobs = JobScheduler(
            self.store, on_due=service.job_due, misfire_grace_s=s.job_misfire_grace_s,
            sync_every_s=s.job_sync_s,
        )  # fmt: skip
        service.jobs.jobs_changed = self.jobs.sync
        self.builtins.bind(deliver=service.deliver_soon, jobs_changed=self.jobs.sync)
        await self.jobs.start()

    async def _stop_jobs(self) -> None:
        if self.jobs is not None:
            await self.jobs.stop()

    async def _start_tools(self, service: ChatService) -> None:
        await self.connectors.start()
        self._watch = ToolWatch(self.store, self.catalog, service.notify_owners)
        await self._watch.sync(self.registry.toolsets, at_start=True)

    async def serve_telegram(self, stop: asyncio.Event) -> None:
        """Serve Telegram (polling, or webhook mode when PALUI_TELEGRAM_WEBHOOK_URL is set) and
        the HTTP server (webhooks, health) until `stop` is set."""
        self.settings.require("telegram_token", "allowed_users")
        assert self.settings.telegram_token is not None
        channel = TelegramChannel(
            self.settings.telegram_token.get_secret_value(),
            self.settings.telegram_api_url,
            stream_replies=self.settings.stream_replies,
        )
        webhooks = load_webhooks(self.settings)  # before anything starts: secrets are checked
        service = self.service = self._service(channel, self.settings.allowed_users)
        await channel.initialize()
        try:
            await self._start_tools(service)
            await service.start()
            await self._start_jobs(service)
            self.http = self._http_server(service, channel, webhooks)
            await self.http.start()
            if self.settings.telegram_webhook_url and self.settings.telegram_webhook_secret:
                secret = self.settings.telegram_webhook_secret.get_secret_value()
                await channel.start_webhook(self.settings.telegram_webhook_url, secret)
            else:
                await channel.start_polling(service)
            log.info("palui_running", database=self.db.kind, model=self.model.name)
            await stop.wait()
        finally:
            log.info("palui_stopping")
            if self.http is not None:
                await self.http.stop()
            await self._stop_jobs()
            await channel.close()
            await service.close()
            await self.connectors.stop()

    def _http_server(
        self, service: ChatService, channel: TelegramChannel, webhooks: dict[str, WebhookSpec]
    ) -> HttpServer:
        s = self.settings
        telegram = None
        if s.telegram_webhook_url and s.telegram_webhook_secret:
            telegram = TelegramWebhook(
                s.telegram_webhook_secret.get_secret_value(),
                functools.partial(channel.feed, service),
            )
        return HttpServer(
            self.store, host=s.http_host, port=s.http_port, webhooks=webhooks,
            on_webhook_stored=service.webhook_stored, telegram=telegram,
            connectors=lambda: [toolset.status() for toolset in self.registry.toolsets],
            max_bytes=s.webhook_max_bytes, rate_per_min=s.webhook_rate_per_min,
        )  # fmt: skip

    async def chat_console(self, read_line: Callable[[str], str], out: TextIO = sys.stdout) -> None:
        """The same engine in a terminal: one line in, the reply out, until EOF or /quit.
        Approval cards become y/n questions."""
        channel = ConsoleChannel(out)
        service = self._service(channel, frozenset({CONSOLE_USER.id}))
        await self._start_tools(service)
        await service.start()
        await self._start_jobs(service)
        out.write("Palui in the terminal. Type a message; /help for commands, /quit to leave.\n")
        try:
            while True:
                try:
                    line = await asyncio.to_thread(read_line, "you> ")
                except EOFError:
                    break
                if line.strip() in {"/quit", "/exit"}:
                    break
                if line.strip():
                    await self._console_event(service, text=line.strip())
                while channel.pending_cards:
                    card = channel.pending_cards.pop(0)
                    try:
                        answer = await asyncio.to_thread(read_line, "Approve? [y/N] ")
                    except EOFError:
                        answer = "n"
                    approve = answer.strip().lower() in {"y", "yes"}
                    suffix = ":y" if approve else ":n"
                    data = next(b.data for b in card.buttons if b.data.endswith(suffix))
                    await self._console_event(service, callback_data=data)
        finally:
            await self._stop_jobs()
            await service.close()

    @staticmethod
    async def _console_event(
        service: ChatService, *, text: str | None = None, callback_data: str | None = None
    ) -> None:
        # Negative ids never collide with Telegram's positive update ids.
        inbound = Inbound(
            update_id=-time.time_ns(), chat_id=CONSOLE_CHAT_ID, user=CONSOLE_USER, text=text,
            callback_query_id="console" if callback_data else None, callback_data=callback_data,
        )  # fmt: skip
        await service.accept(inbound)
        await service.wait_idle(CONSOLE_CHAT_ID)
