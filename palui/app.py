"""The composition root: builds every part from Settings and owns the start/stop order.

async with Palui(settings) as app:      # database opened and migrated, model built
    await app.serve_telegram(stop)      # until `stop` is set
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from typing import TextIO

from palui.channels.console import ConsoleChannel
from palui.channels.telegram import TelegramChannel
from palui.config import Settings
from palui.db import Database, Store
from palui.domain import ChatUser, Inbound
from palui.llm import LiteLLMModel
from palui.logs import get_logger
from palui.ports import Channel
from palui.service import ChatService, Limits, ServiceInfo

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


class Palui:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.db = Database(settings.resolved_database_url)
        self.store = Store(self.db)
        self.model = build_model(settings)

    async def __aenter__(self) -> Palui:
        await self.db.migrate()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.db.close()

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
            ),
            info=ServiceInfo(
                model=self.model.name,
                fallbacks=tuple(s.fallback_models),
                database_kind=self.db.kind,
            ),
        )

    async def serve_telegram(self, stop: asyncio.Event) -> None:
        """Poll Telegram and answer until `stop` is set."""
        self.settings.require("telegram_token", "allowed_users")
        assert self.settings.telegram_token is not None
        channel = TelegramChannel(
            self.settings.telegram_token.get_secret_value(),
            self.settings.telegram_api_url,
            stream_replies=self.settings.stream_replies,
        )
        service = self._service(channel, self.settings.allowed_users)
        await channel.initialize()
        try:
            await service.start()
            await channel.start_polling(service)
            log.info("palui_running", database=self.db.kind, model=self.model.name)
            await stop.wait()
        finally:
            log.info("palui_stopping")
            await channel.close()
            await service.close()

    async def chat_console(self, read_line: Callable[[], str], out: TextIO = sys.stdout) -> None:
        """The same engine in a terminal: one line in, the reply out, until EOF or /quit."""
        channel = ConsoleChannel(out)
        service = self._service(channel, frozenset({CONSOLE_USER.id}))
        await service.start()
        out.write("Palui in the terminal. Type a message; /help for commands, /quit to leave.\n")
        try:
            while True:
                try:
                    line = await asyncio.to_thread(read_line)
                except EOFError:
                    break
                if line.strip() in {"/quit", "/exit"}:
                    break
                if not line.strip():
                    continue
                # Negative ids never collide with Telegram's positive update ids.
                inbound = Inbound(
                    update_id=-time.time_ns(), chat_id=CONSOLE_CHAT_ID, user=CONSOLE_USER,
                    text=line.strip(),
                )  # fmt: skip
                await service.accept(inbound)
                await service.wait_idle(CONSOLE_CHAT_ID)
        finally:
            await service.close()
