"""Remote connectors that sign in with OAuth: the parts built from `Settings` and handed to the
connectors (the grant store and where browsers come back), to the commands (`/connect`) and to
the HTTP server (the callback and the client metadata document)."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from datetime import datetime

from palui.chat.wakeups import Wakeups
from palui.config import Settings
from palui.connectors import ConnectorManager
from palui.connectors.oauth import OAuthSetup
from palui.connectors.signin import SignIns
from palui.db import Store
from palui.db.engine import Database
from palui.db.oauth import OAuthGrantRepo
from palui.db.sealing import SecretBox
from palui.db.sign_ins import SignInRepo
from palui.http.oauth import OAuthRoutes
from palui.interact.connect import RemoteSignIns
from palui.ports import Channel


class Remote:
    """Built only when some `[mcp.*]` server may sign in (the key file is made then)."""

    def __init__(self, settings: Settings, db: Database, web_base: Callable[[], str]) -> None:
        key = settings.secret_key
        box = (
            SecretBox.from_passphrase(key.get_secret_value())
            if key is not None
            else SecretBox.from_key_file(settings.data_dir)
        )
        self.grants = OAuthGrantRepo(db, box)
        holder = f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.setup = OAuthSetup(self.grants, web_base, holder)
        self.sign_ins = SignIns(SignInRepo(db, box))  # any process takes a browser's return
        self._signed: RemoteSignIns | None = None

    @staticmethod
    def wanted(settings: Settings) -> bool:
        return any(server.may_sign_in for server in settings.mcp.values())

    async def lapsed(self, connector_id: str) -> None:
        """A connector's grant stopped working (its connector calls this)."""
        if self._signed is not None:
            await self._signed.lapsed(connector_id)

    def interactions(
        self,
        store: Store,
        channel: Channel,
        connectors: ConnectorManager,
        *,
        deliver: Callable[[int], None],
        now: Callable[[], datetime],
    ) -> RemoteSignIns:
        oauth = (self.sign_ins, self.grants)
        signed = RemoteSignIns(store, channel, connectors, oauth, deliver=deliver, now=now)
        self._signed = signed  # the lapse notices go to the chat served now
        return signed

    def routes(self) -> OAuthRoutes:
        return OAuthRoutes(self.sign_ins, self.setup)

    async def close(self) -> None:
        if self._signed is not None:
            await self._signed.close()
        await self.sign_ins.close()


def build_remote(settings: Settings, db: Database, web_base: Callable[[], str]) -> Remote | None:
    return Remote(settings, db, web_base) if Remote.wanted(settings) else None


def remote_commands(
    remote: Remote | None,
    store: Store,
    channel: Channel,
    connectors: ConnectorManager,
    wakeups: Wakeups,
    now: Callable[[], datetime],
) -> RemoteSignIns:
    """`/connect`, `/disconnect`, pasted addresses and taps on servers' questions."""
    deliver = wakeups.deliver_soon
    if remote is None:
        return RemoteSignIns(store, channel, connectors, None, deliver=deliver, now=now)
    return remote.interactions(store, channel, connectors, deliver=deliver, now=now)


def oauth_routes(remote: Remote | None) -> OAuthRoutes | None:
    return remote.routes() if remote is not None else None


async def close_remote(remote: Remote | None) -> None:
    if remote is not None:
        await remote.close()
