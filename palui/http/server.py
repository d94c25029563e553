"""Palui's own HTTP server (aiohttp): `GET /healthz`, `GET /metrics`, `POST /webhooks/<name>`,
`POST /telegram`, and the web console (palui.web) mounted at `/ui` when one is given.

Rules it keeps (DESIGN §1.9, §3):
- a webhook delivery is answered 202 only once it is stored; every refusal (401, 404, 413, 400,
  409, 429) stores nothing, runs nothing, leaves one audit log line and answers
  `{"error": "..."}` (a throttled request leaves none: the failure that started the throttle
  has its line, and a flood of guesses must not flood the log);
- failed authentications are throttled per client address and endpoint (`palui.http.throttle`):
  a right secret is always let in, and only failures count; a wrong one from an address past its
  failures gets 429 with Retry-After instead of 401;
- the client is the TCP peer, or, behind a reverse proxy in PALUI_HTTP_TRUSTED_PROXIES, the
  address its X-Forwarded-For names (`palui.http.clients`): every check and log line sees it as
  `request.remote`;
- a signed delivery is accepted once: a replay gets 409 (the database refuses its signature);
- a header no check foresaw is a 401, never a 500 (authentication fails closed);
- no body is read past its limit;
- in Telegram webhook mode an update is answered 200 only once it is in the inbox (a 5xx makes
  Telegram deliver it again; a redelivered update_id is dropped by the inbox);
- secrets are compared in constant time and never logged or echoed;
- `/metrics` answers a loopback client (not one relayed by a proxy on this host), or with
  `[http] metrics_token` set only a request that carries it as a bearer token (from anywhere),
  failures throttled as above.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from palui.db import Store
from palui.domain import ConnectorState, ConnectorStatus, Conversation
from palui.errors import ConfigError, PaluiError, Replayed
from palui.http.clients import FORWARDED_FOR, Network, client_address
from palui.http.oauth import OAuthRoutes
from palui.http.throttle import FailureThrottle
from palui.logs import get_logger
from palui.observe import Metrics
from palui.observe.process import StartUp
from palui.webhooks.auth import Authentication, authenticate, same_secret
from palui.webhooks.specs import WebhookSpec

log = get_logger("palui.http")

TELEGRAM_SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
TELEGRAM_MAX_BYTES = 1_048_576
HEALTH_DB_TIMEOUT_S = 3.0
JSON_TYPES = ("application/json",)

TelegramFeed = Callable[[dict[str, Any]], Awaitable[None]]


def _loopback(address: str | None) -> bool:
    try:
        return address is not None and ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class BadPayload(ValueError):
    """The body is not what its content type says (the message goes back to the sender)."""


@dataclass(frozen=True, slots=True)
class TelegramWebhook:
    """Telegram webhook mode: the secret Telegram echoes back, and where updates go."""

    secret: str
    feed: TelegramFeed  # raises BadPayload for an update that can't be read


def _error(status: int, message: str, *, retry_after: int | None = None) -> web.Response:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return web.json_response({"error": message}, status=status, headers=headers)


def _throttled(retry_after: int) -> web.Response:
    message = f"too many failed authentications; try again in {retry_after} s"
    return _error(429, message, retry_after=retry_after)


def _is_json(content_type: str) -> bool:
    return content_type in JSON_TYPES or content_type.endswith("+json")


def decode_payload(content_type: str, body: bytes) -> str:
    """The body as text, checked against its content type."""
    if not body.strip():
        raise BadPayload("the body is empty")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadPayload("the body is not UTF-8 text") from None
    if _is_json(content_type):
        try:
            json.loads(text)
        except ValueError:
            raise BadPayload("the body is not valid JSON") from None
    return text


async def read_limited(request: web.Request, limit: int) -> bytes | None:
    """The body, or None when it is longer than `limit` (nothing past the limit is read)."""
    if request.content_length is not None and request.content_length > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    while chunk := await request.content.read(min(65_536, limit + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return None
    return b"".join(chunks)


@web.middleware
async def _json_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """aiohttp's own refusals (no such route, wrong method) as JSON too."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(exc.status, exc.reason.lower())


def _clients(trusted: Sequence[Network]) -> Middleware:
    """Every handler (the console's too) sees the client as `request.remote`."""

    @web.middleware
    async def client(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        forwarded = request.headers.getall(FORWARDED_FOR, ())
        address = client_address(request.remote, forwarded, trusted)
        if address is not None and address != request.remote:
            request = request.clone(remote=address)
        return await handler(request)

    return client


async def _to_console(_request: web.Request) -> web.Response:
    return web.Response(status=303, headers={"Location": "/ui/"})


class HttpServer:
    def __init__(
        self,
        store: Store,
        *,
        host: str,
        port: int,
        webhooks: Mapping[str, WebhookSpec],
        on_webhook_stored: Callable[[int], None],
        connectors: Callable[[], Sequence[ConnectorStatus]] = list,
        telegram: TelegramWebhook | None = None,
        max_bytes: int = 1_048_576,
        rate_per_min: int = 60,
        clock: Callable[[], float] = time.time,
        throttle: FailureThrottle | None = None,
        console: web.Application | None = None,
        trusted_proxies: Sequence[Network] = (),
        oauth: OAuthRoutes | None = None,
        metrics: Metrics | None = None,
        metrics_token: str | None = None,
        process: StartUp | None = None,
    ) -> None:
        self._process = process if process is not None else StartUp()
        self._metrics = metrics
        self._metrics_token = metrics_token
        self._store = store
        self._oauth = oauth  # remote connectors' sign-in callback and client document
        self._host = host
        self._port = port
        self._webhooks = dict(webhooks)
        self._on_stored = on_webhook_stored
        self._connectors = connectors
        self._telegram = telegram
        self._max_bytes = max_bytes
        self._rate_per_min = rate_per_min  # counted in the database: shared by all processes
        self._clock = clock
        self._throttle = throttle if throttle is not None else FailureThrottle()
        self._console = console  # the web console's sub-application (its own access checks)
        self._trusted_proxies = tuple(trusted_proxies)
        self._runner: web.AppRunner | None = None
        self.port = port
        self.listening = False  # True once `start` has bound the port

    @property
    def url(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        app = web.Application(middlewares=[_clients(self._trusted_proxies), _json_errors])
        app.router.add_get("/healthz", self._healthz)
        if self._metrics is not None:
            app.router.add_get("/metrics", self._metrics_page)
        app.router.add_post("/webhooks/{name}", self._webhook)
        app.router.add_post("/telegram", self._telegram_update)
        if self._oauth is not None:
            self._oauth.add_to(app.router)
        if self._console is not None:
            app.router.add_get("/ui", _to_console)
            app.add_subapp("/ui", self._console)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            self._runner = None
            raise ConfigError(
                f"PALUI_HTTP_HOST/PALUI_HTTP_PORT: can't listen on {self._host}:{self._port} "
                f"({exc.strerror or exc}). Pick a free port or stop what uses it."
            ) from None
        self.port = self._runner.addresses[0][1]
        self.listening = True
        log.info("http_listening", host=self._host, port=self.port, webhooks=len(self._webhooks))

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- GET /healthz -----------------------------------------------------------------------------

    async def _healthz(self, _request: web.Request) -> web.Response:
        database: dict[str, Any] = {"kind": self._store.db.kind}
        try:
            async with asyncio.timeout(HEALTH_DB_TIMEOUT_S):
                current, head = await self._store.db.revisions()
            database.update(reachable=True, schema="current" if current == head else "behind")
        except (PaluiError, TimeoutError):
            database.update(reachable=False)
        statuses = list(self._connectors())
        up = [s.id for s in statuses if s.state == ConnectorState.CONNECTED]
        paused = [s.id for s in statuses if s.state == ConnectorState.PAUSED]
        down = [s.id for s in statuses if s.id not in up and s.id not in paused]
        ok = bool(database["reachable"])
        body = {
            "ok": ok,
            # Degraded: up, but its database can't be reached; what arrives meanwhile waits
            # (Telegram keeps updates until they are stored) and is answered once it is back.
            "status": "ok" if ok else "degraded",
            "database": database,
            "connectors": {"up": up, "down": down, "paused": paused},
            "telegram": "webhook" if self._telegram else "polling",
            "process": self._process.facts().as_json(),  # what it costs its host
        }
        return web.json_response(body, status=200 if ok else 503)

    # -- GET /metrics -----------------------------------------------------------------------------

    async def _metrics_page(self, request: web.Request) -> web.Response:
        assert self._metrics is not None
        if self._metrics_token is None:
            # A forwarding header means a proxy on this host relayed it: not a local client.
            relayed = FORWARDED_FOR in request.headers or "Forwarded" in request.headers
            if relayed or not _loopback(request.remote):
                return _error(403, "metrics are served to loopback only; set [http] metrics_token")
        else:
            given = request.headers.get("Authorization", "").removeprefix("Bearer ")
            if not same_secret(given, self._metrics_token):
                if (throttled := self._throttled_failure(request, "metrics")) is not None:
                    return throttled
                log.warning("metrics_refused", remote=request.remote)
                return _error(401, "unauthorized")
        body = self._metrics.render()
        return web.Response(body=body, headers={"Content-Type": self._metrics.content_type})

    # -- POST /webhooks/<name> --------------------------------------------------------------------

    def _refuse(
        self, request: web.Request, status: int, error: str, reason: str, **extra: Any
    ) -> web.Response:
        log.warning(
            "webhook_refused",
            webhook=request.match_info.get("name"),
            status=status,
            reason=reason,
            remote=request.remote,
        )
        return _error(status, error, **extra)

    def _throttled_failure(self, request: web.Request, endpoint: str) -> web.Response | None:
        """A failed authentication: the 429 when its address is past its failures (no log
        line, not counted), else None once it is counted (the caller answers 401). No await
        lies between a secret's check and this, so a burst of concurrent guesses gets `limit`
        401s, not one per request."""
        wait = self._throttle.retry_after(endpoint, request.remote)
        if wait is not None:
            return _throttled(wait)
        if self._throttle.failed(endpoint, request.remote):
            log.warning("auth_throttled", endpoint=endpoint, remote=request.remote)
        return None

    async def _webhook(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        spec = self._webhooks.get(name)
        if spec is None:
            return self._refuse(request, 404, f"no webhook named {name!r}", "unknown name")
        body = await read_limited(request, self._max_bytes)
        if body is None:
            limit = f"the body is over the limit of {self._max_bytes:,} bytes"
            return self._refuse(request, 413, limit, "too large")
        try:
            verdict = authenticate(spec, request.headers, body, self._clock())
        except Exception:  # fail closed: a header no check foresaw is a refusal, not a 500
            verdict = Authentication("unreadable authentication header")
        if verdict.refusal is not None:
            if (throttled := self._throttled_failure(request, f"webhook:{name}")) is not None:
                return throttled
            error = "unauthorized: missing or wrong secret, or a bad or stale signature"
            return self._refuse(request, 401, error, verdict.refusal)
        try:
            text = decode_payload(request.content_type, body)
        except BadPayload as exc:
            return self._refuse(request, 400, f"malformed payload: {exc}", str(exc))
        try:
            chat = await self._store.topics.key(Conversation(spec.chat_id, spec.topic_id))
            delivery_id = await self._store.webhooks.add(
                name,
                chat,
                text,
                content_type=request.content_type,
                instructions=spec.instructions,
                per_minute=self._rate_per_min,
                replay_key=verdict.replay_key,
            )
        except Replayed:
            error = "this signed delivery was already accepted; sign each one with a new timestamp"
            return self._refuse(request, 409, error, "replay")
        except Exception:
            log.exception("webhook_not_stored", webhook=name)
            return _error(503, "the delivery could not be stored; send it again later")
        if delivery_id is None:
            error = "too many deliveries; try again in a minute"
            return self._refuse(request, 429, error, "rate", retry_after=60)
        log.info("webhook_stored", webhook=name, delivery_id=delivery_id, size=len(body))
        self._on_stored(chat)
        return web.json_response({"accepted": True, "delivery_id": delivery_id}, status=202)

    # -- POST /telegram ---------------------------------------------------------------------------

    async def _telegram_update(self, request: web.Request) -> web.Response:
        if self._telegram is None:
            return _error(404, "Telegram webhook mode is off")
        given = request.headers.get(TELEGRAM_SECRET_HEADER, "")
        if not same_secret(given, self._telegram.secret):
            if (throttled := self._throttled_failure(request, "telegram")) is not None:
                return throttled
            log.warning(
                "telegram_update_refused", reason="wrong secret token", remote=request.remote
            )
            return _error(401, "unauthorized")
        body = await read_limited(request, TELEGRAM_MAX_BYTES)
        if body is None:
            return _error(413, "the update is too large")
        try:
            update = json.loads(body)
            if not isinstance(update, dict):
                raise BadPayload("an update is a JSON object")
            await self._telegram.feed(update)
        except ValueError as exc:
            log.warning("telegram_update_refused", reason=f"malformed: {exc}")
            return _error(400, "malformed update")
        except Exception:
            # Not stored (e.g. the database is down): a 5xx makes Telegram send it again.
            log.exception("update_not_stored")
            return _error(500, "the update could not be stored; send it again")
        return web.json_response({"ok": True})
