"""A fake Telegram Bot API server on loopback that the real python-telegram-bot talks to.

    async with FakeTelegram() as fake:
        bot = telegram.Bot(fake.token, base_url=fake.base_url)
        update_id = fake.push_text(chat_id=42, user_id=42, text="hi")
        ...
        [reply] = await fake.wait_for_messages(42, count=1)

It keeps the behaviours Palui's reliability rests on: getUpdates long-polls and redelivers every
update until a later call's offset confirms it; texts are checked for length and HTML after
entity parsing; editing to the same content is "message is not modified"; `flood()` answers 429
with retry_after; `fail()` starts an outage (502s, hangs, 429s for every method) until its
`end()` (tests/fakes/telegram_outage.py). The server is plain HTTP, so a bot in another process
can use it too.
While a webhook is set, getUpdates is refused (409) as Telegram does, and a test hands an update
to the webhook with `deliver_to_webhook(update_id)` (a POST carrying setWebhook's secret_token
header, like Telegram's; a 2xx answer confirms the update).
`sendMessageDraft` (private chats only; drafts are not messages) answers once a test sets
`drafts_supported = True` (tests/fakes/telegram_drafts.py); `keep_limits()` makes it refuse, with
429, a bot that sends faster than Telegram allows (tests/fakes/telegram_limits.py).
Link previews: Telegram fetches the first URL of a sent or edited text unless
`link_preview_options` says `is_disabled`; `previews_allowed` lists every sendMessage and
editMessageText that did not disable them, and `previews_fetched` the URLs Telegram would have
fetched (the `fake_telegram` fixture fails a test that leaves any).
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiohttp import web
from aiohttp.web_request import FileField

from tests.fakes.telegram_chats import AnsweredCallback, ApiError, FakeChats, Upload, bad_request
from tests.fakes.telegram_drafts import FakeDrafts
from tests.fakes.telegram_entities import command_entities
from tests.fakes.telegram_files import FakeFiles
from tests.fakes.telegram_groups import FakeGroups
from tests.fakes.telegram_limits import TelegramLimits
from tests.fakes.telegram_outage import TelegramOutage
from tests.fakes.telegram_topics import FakeTopics

__all__ = ["DEFAULT_TOKEN", "AnsweredCallback", "FakeTelegram", "RecordedRequest"]

DEFAULT_TOKEN = "123456789:AAHfake-Token_for-Palui-tests0123456"


def _names(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Form-encoded values arrive as strings; PTB JSON-encodes every non-string parameter.
_JSON_FIELDS = _names(
    "reply_markup entities commands scope "
    "allowed_updates link_preview_options reply_parameters caption_entities reaction"
)
_INT_FIELDS = _names(
    "chat_id message_id offset limit timeout draft_id "
    "user_id reply_to_message_id message_thread_id cache_time max_connections"
)
_BOOL_FIELDS = _names(
    "disable_notification protect_content show_alert "
    "drop_pending_updates disable_web_page_preview allow_sending_without_reply is_big"
)


# What Telegram would fetch for a preview: the first web address in the text (or a link's href).
_URL = re.compile(r"https?://[^\s\"'<>]+", re.IGNORECASE)
_TEXT_METHODS = frozenset({"sendmessage", "editmessagetext"})


def allows_preview(method: str, params: dict[str, Any]) -> bool:
    """Would Telegram show (and fetch) a link preview for this request's text?"""
    if method.lower() not in _TEXT_METHODS:
        return False
    options = params.get("link_preview_options")
    disabled = isinstance(options, dict) and options.get("is_disabled") is True
    return not disabled and not params.get("disable_web_page_preview")


@dataclass(frozen=True)
class RecordedRequest:
    """One Bot API call as the fake received it (time is `time.monotonic()`)."""

    method: str
    params: dict[str, Any]
    at: float


class FakeTelegram:
    def __init__(self, token: str = DEFAULT_TOKEN, *, bot_username: str = "palui_test_bot") -> None:
        self.token = token
        self.bot_user: dict[str, Any] = {
            "id": int(token.split(":")[0]),
            "is_bot": True,
            "first_name": "Palui",
            "username": bot_username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }
        self.chats = FakeChats(self.bot_user)
        self.drafts = FakeDrafts()
        self.drafts_supported = False  # an older Bot API: sendMessageDraft is 404 Not Found
        self.limits: TelegramLimits | None = None  # keep_limits(): 429 past Telegram's pace
        self.limit_rejections: list[RecordedRequest] = []
        self.outage: TelegramOutage | None = None  # fail(): every request fails until its end()
        self.files = FakeFiles(token, self.chats, self.push_update)  # getFile and downloads
        self.requests: list[RecordedRequest] = []
        self.flood_rejections: list[RecordedRequest] = []
        self.previews_allowed: list[RecordedRequest] = []  # texts sent with previews on
        self.previews_fetched: list[str] = []  # the URLs Telegram fetched for those previews
        self.webhook_url = ""
        self.webhook_secret: str | None = None
        self._next_update_id = 100_001
        self._pending: list[dict[str, Any]] = []  # unconfirmed updates, by update_id
        self._pushed: dict[int, dict[str, Any]] = {}  # every update ever pushed
        self._replay: list[dict[str, Any]] = []  # sent once more whatever the offset says
        self._delivered: Counter[int] = Counter()
        self._confirmed_below = 0
        self._poll_generation = 0
        self._floods: dict[str, list[int]] = {}  # method -> [calls left to reject, retry_after]
        # hold_answer(): (method, predicate, set once the request was carried out)
        self._holds: list[tuple[str, Callable[[dict[str, Any]], bool], asyncio.Event]] = []
        self._changed_event = asyncio.Event()
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._handlers: dict[str, Callable[[dict[str, Any]], Any]] = {
            **self.chats.handlers(),
            "sendmessagedraft": self.drafts.api_send_message_draft,
            **self.files.handlers(),
            "getme": lambda _p: self.bot_user,
            "setwebhook": self._set_webhook,
            "deletewebhook": lambda p: self._set_webhook({**p, "url": ""}),
            "getwebhookinfo": self._webhook_info,
            "logout": lambda _p: True,
            "close": lambda _p: True,
        }
        # Groups, forwards, replies and reactions (issue 15): tests/fakes/telegram_groups.py.
        self.groups = FakeGroups(self.chats, self._pushed)
        self._handlers.update(self.groups.handlers())
        self.topics = FakeTopics(self.chats, self.groups)  # issue 30: telegram_topics.py
        self._handlers.update(self.topics.handlers())

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        self.files.add_routes(app)  # /file/bot<token>/...: before the catch-all
        app.router.add_route("*", "/{path:.*}", self._handle)
        # A client that gives up on a long poll must not leave a handler that swallows updates.
        self._runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        self._closing = True
        self._changed()  # releases long polls so shutdown doesn't wait for their timeout
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeTelegram:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        """What to pass as `telegram.Bot(base_url=...)`; PTB appends the token."""
        return f"{self.url}/bot"

    # --- test side: incoming ------------------------------------------------------------

    def push_update(self, update: dict[str, Any]) -> int:
        """Queue an update for getUpdates; an update without update_id gets the next one."""
        update = dict(update)
        update_id = int(update.setdefault("update_id", self._next_update_id))
        self._next_update_id = max(self._next_update_id, update_id + 1)
        self._pushed[update_id] = copy.deepcopy(update)
        self._pending.append(update)
        self._pending.sort(key=lambda u: u["update_id"])
        self._changed()
        return update_id

    def push_text(
        self,
        chat_id: int,
        user_id: int,
        text: str,
        *,
        username: str | None = None,
        chat_type: str = "private",
        edited: bool = False,
    ) -> int:
        """Queue a text message (or its edit) from a user; returns the update_id."""
        user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"}
        if username:
            user["username"] = username
        message = self.chats.user_message(chat_id, user, text, chat_type)
        if edited:
            message["edit_date"] = message["date"]
        return self.push_update({"edited_message" if edited else "message": message})

    def push_edit(self, update_id: int, text: str) -> int:
        """Queue the `edited_message` Telegram sends when a user edits the message of update
        `update_id` to `text`: the same message id and date, new text and entities, and an
        `edit_date`. Returns the new update_id."""
        message = copy.deepcopy(self._pushed[update_id]["message"])
        message["text"] = text
        message.pop("entities", None)
        if entities := command_entities(text):
            message["entities"] = entities
        message["edit_date"] = max(int(time.time()), message["date"])
        return self.push_update({"edited_message": message})

    @property
    def last_update_id(self) -> int:
        return self._next_update_id - 1

    def redeliver(self, update_id: int) -> None:
        """Send an already confirmed update again on the next getUpdates, as Telegram does when
        it never saw the confirmation (at-least-once delivery)."""
        self._replay.append(copy.deepcopy(self._pushed[update_id]))
        self._changed()

    def push_photo(self, chat_id: int, user_id: int) -> int:
        """Queue a photo message (no text); returns the update_id."""
        user = {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"}
        message = self.chats.user_message(chat_id, user, "", "private")
        message.pop("text", None)
        message.pop("entities", None)
        message["photo"] = [
            {"file_id": "photo-1", "file_unique_id": "u1", "width": 90, "height": 90}
        ]
        return self.push_update({"message": message})

    def push_callback(self, chat_id: int, user_id: int, message_id: int, data: str) -> int:
        """Queue a button press on message `message_id`; returns the update_id."""
        query = self.chats.callback_query(chat_id, user_id, message_id, data)
        return self.push_update({"callback_query": query})

    async def deliver_to_webhook(
        self,
        update_id: int,
        *,
        secret_token: str | None = "",
        body: bytes | None = None,
        url: str | None = None,
    ) -> int:
        """POST a pushed update to the webhook URL as Telegram does; the HTTP status.

        `secret_token` defaults to the one given to setWebhook (None: no header); `body`
        replaces the update's JSON; `url` replaces the webhook URL (one of several processes
        behind a load balancer). A 2xx answer confirms the update; it may be delivered again.
        """
        import aiohttp

        if not self.webhook_url:
            raise AssertionError("no webhook is set (setWebhook was not called)")
        token = self.webhook_secret if secret_token == "" else secret_token
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["X-Telegram-Bot-Api-Secret-Token"] = token
        data = body if body is not None else json.dumps(self._pushed[update_id]).encode()
        async with (
            aiohttp.ClientSession() as session,
            session.post(url or self.webhook_url, data=data, headers=headers) as response,
        ):
            await response.read()
            status = response.status
        if 200 <= status < 300:
            self._delivered[update_id] += 1
            self._pending = [u for u in self._pending if u["update_id"] != update_id]
            self._changed()
        return status

    def keep_limits(self, limits: TelegramLimits | None = None) -> TelegramLimits:
        """From now on refuse (429) any message past Telegram's limits; see telegram_limits."""
        self.limits = limits or TelegramLimits()
        return self.limits

    def fail(self, *, retry_after: int = 2) -> TelegramOutage:
        """From now until the returned outage's `end()`, fail every request as Telegram does
        in an outage (502, a hang, 429 in turn; none carried out): telegram_outage.py."""
        self.outage = TelegramOutage(retry_after=retry_after)
        return self.outage

    def flood(self, method: str = "sendMessage", times: int = 1, retry_after: int = 2) -> None:
        """Make the next `times` calls of `method` fail with 429 Too Many Requests."""
        self._floods[method.lower()] = [times, retry_after]

    # --- test side: groups, forwards, replies (issue 15; tests/fakes/telegram_groups.py) ---

    def hold_answer(
        self, method: str, predicate: Callable[[dict[str, Any]], bool]
    ) -> asyncio.Event:
        """The next `method` request matching `predicate` is carried out (a sendMessage's
        message is in the chat) but never answered, until the client goes away: what a sender
        killed after Telegram accepted its request leaves. The event is set once it is done."""
        done = asyncio.Event()
        self._holds.append((method.lower(), predicate, done))
        return done

    def push_message(self, chat_id: int, user_id: int, text: str, **options: Any) -> int:
        """Queue a user's message with `FakeGroups.message`'s options (a group chat for a
        negative `chat_id`, `reply_to` a message id, `forward_from` an origin); the update_id."""
        return self.push_update({"message": self.groups.message(chat_id, user_id, text, **options)})

    def push_topic_message(
        self, chat_id: int, user_id: int, text: str, topic: int, **options: Any
    ) -> int:
        """As `push_message`, said in topic `topic` (a thread id from `topics.open_topic`)."""
        message = self.groups.message(chat_id, user_id, text, **options)
        return self.push_update({"message": self.topics.in_topic(message, topic)})

    def message_id_of(self, update_id: int) -> int:
        """The message id of a pushed message update (what a reply or a reaction names)."""
        update = self._pushed[update_id]
        return int((update.get("message") or update["edited_message"])["message_id"])

    # --- test side: what the bot did ----------------------------------------------------

    def sent_messages(self, chat_id: int | None = None) -> list[dict[str, Any]]:
        """Every message the bot sent (deleted ones too), oldest first, as currently edited."""
        return self.chats.sent_messages(chat_id)

    def visible_messages(self, chat_id: int | None = None) -> list[dict[str, Any]]:
        """The bot's messages still in the chat (not deleted)."""
        gone = set(self.chats.deleted_messages)
        return [
            m for m in self.sent_messages(chat_id) if (m["chat"]["id"], m["message_id"]) not in gone
        ]

    @property
    def chat_actions(self) -> list[tuple[int, str]]:
        """(chat_id, action) of every sendChatAction, in order."""
        return list(self.chats.chat_actions)

    @property
    def answered_callbacks(self) -> list[AnsweredCallback]:
        return list(self.chats.answered_callbacks)

    @property
    def deleted_messages(self) -> list[tuple[int, int]]:
        """(chat_id, message_id) of every message the bot deleted."""
        return list(self.chats.deleted_messages)

    @property
    def commands(self) -> list[dict[str, Any]]:
        """The command list of the last setMyCommands call."""
        return copy.deepcopy(self.chats.last_commands)

    def delivered_count(self, update_id: int) -> int:
        """How many getUpdates answers included this update."""
        return self._delivered[update_id]

    def is_confirmed(self, update_id: int) -> bool:
        return update_id < self._confirmed_below

    # A `timeout` argument (ASYNC109) keeps test lines short and makes a hung wait fail with
    # a message saying what was awaited.
    async def wait_for_messages(
        self,
        chat_id: int,
        count: int,
        timeout: float = 30,  # noqa: ASYNC109
    ) -> list[dict[str, Any]]:
        await self._wait(
            lambda: len(self.sent_messages(chat_id)) >= count,
            timeout,
            lambda: f"{count} messages to chat {chat_id}; got {self.sent_messages(chat_id)}",
        )
        return self.sent_messages(chat_id)

    async def wait_for_text(
        self,
        chat_id: int,
        fragment: str,
        timeout: float = 30,  # noqa: ASYNC109
    ) -> dict[str, Any]:
        """The first message in the chat whose text (as last edited) holds `fragment`: a
        streamed answer is edited as it grows, so its first text may be only a prefix."""

        def find() -> dict[str, Any] | None:
            return next(
                (m for m in self.sent_messages(chat_id) if fragment in m.get("text", "")), None
            )

        await self._wait(
            lambda: find() is not None,
            timeout,
            lambda: f"{fragment!r} in chat {chat_id}; got {self.sent_messages(chat_id)}",
        )
        found = find()
        assert found is not None
        return found

    async def wait_for_request(
        self,
        method: str,
        predicate: Callable[[dict[str, Any]], bool] | None = None,
        timeout: float = 30,  # noqa: ASYNC109
    ) -> RecordedRequest:
        """The first request (so far or later) to `method` whose params satisfy `predicate`."""

        def find() -> RecordedRequest | None:
            for request in self.requests:
                if request.method.lower() == method.lower() and (
                    predicate is None or predicate(request.params)
                ):
                    return request
            return None

        await self._wait(lambda: find() is not None, timeout, lambda: f"a {method} request")
        found = find()
        assert found is not None
        return found

    async def wait_until_confirmed(self, update_id: int, timeout: float = 30) -> None:  # noqa: ASYNC109
        await self._wait(
            lambda: self.is_confirmed(update_id),
            timeout,
            lambda: f"getUpdates to confirm update {update_id} (offset {self._confirmed_below})",
        )

    async def wait_for_delivery(self, update_id: int, timeout: float = 30) -> None:  # noqa: ASYNC109
        await self._wait(
            lambda: self._delivered[update_id] > 0,
            timeout,
            lambda: f"getUpdates to deliver update {update_id}",
        )

    # --- plumbing -----------------------------------------------------------------------

    def _changed(self) -> None:
        self._changed_event.set()
        self._changed_event = asyncio.Event()

    async def _wait(
        self,
        ready: Callable[[], bool],
        timeout: float,  # noqa: ASYNC109
        what: Callable[[], str],
    ) -> None:
        try:
            async with asyncio.timeout(timeout):
                while not ready():
                    await self._changed_event.wait()
        except TimeoutError:
            raise TimeoutError(f"waited {timeout} s for {what()}") from None

    async def _handle(self, request: web.Request) -> web.Response:
        token, _, method = request.match_info["path"].removeprefix("bot").partition("/")
        try:
            params = await _read_params(request)
        except ApiError as error:
            return _error_response(error)
        recorded = RecordedRequest(method, params, time.monotonic())
        self.requests.append(recorded)
        if allows_preview(method, params):
            self.previews_allowed.append(recorded)
            if found := _URL.search(str(params.get("text", ""))):
                self.previews_fetched.append(found.group(0))
        self._changed()
        if token != self.token:
            # Telegram: 404 for a token that isn't one, 401 for a well-formed wrong token.
            status = 401 if ":" in token else 404
            return _error_response(
                ApiError(status, "Unauthorized" if status == 401 else "Not Found")
            )
        handler = self._handlers.get(method.lower())
        if method.lower() == "sendmessagedraft" and not self.drafts_supported:
            handler = None
        if handler is None and method.lower() != "getupdates":
            return _error_response(ApiError(404, "Not Found"))
        if self.outage is not None and self.outage.active:
            try:
                return await self.outage.answer(method)
            except ApiError as error:
                return _error_response(error)
        if (flood := self._floods.get(method.lower())) and flood[0] > 0:
            flood[0] -= 1
            self.flood_rejections.append(recorded)
            retry_after = flood[1]
            return _error_response(
                ApiError(
                    429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after
                )
            )
        if self.limits is not None and (
            wait := self.limits.retry_after(method.lower(), params.get("chat_id"), recorded.at)
        ):
            self.limit_rejections.append(recorded)
            return _error_response(
                ApiError(429, f"Too Many Requests: retry after {wait}", retry_after=wait)
            )
        try:
            if handler is None:
                result = await self._get_updates(params)
            else:
                if method.lower() == "sendmessagedraft":
                    self.topics.check_draft(params)
                result = handler(params)
                if method.lower() == "sendmessage":
                    self.drafts.message_sent(int(params["chat_id"]))
        except ApiError as error:
            return _error_response(error)
        finally:
            self._changed()
        for hold in self._holds:
            if hold[0] == method.lower() and hold[1](params):
                self._holds.remove(hold)
                hold[2].set()
                while not self._closing:  # cancelled when the client disconnects
                    await self._changed_event.wait()
                break
        return web.json_response({"ok": True, "result": result})

    async def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self.webhook_url:
            raise ApiError(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        offset = int(params.get("offset") or 0)
        limit = min(max(int(params.get("limit") or 100), 1), 100)
        timeout = max(float(params.get("timeout") or 0), 0.0)
        self._confirm(offset)
        self._poll_generation += 1
        generation = self._poll_generation
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (
            not self._pending and not self._replay and not self._closing and loop.time() < deadline
        ):
            try:
                async with asyncio.timeout_at(deadline):
                    await self._changed_event.wait()
            except TimeoutError:
                break
            if generation != self._poll_generation:
                raise ApiError(
                    409,
                    "Conflict: terminated by other getUpdates request; "
                    "make sure that only one bot instance is running",
                )
        replay, self._replay = self._replay, []
        batch = [] if self._closing else (replay + self._pending)[:limit]
        self._delivered.update(u["update_id"] for u in batch)
        return copy.deepcopy(batch)

    def _confirm(self, offset: int) -> None:
        if offset < 0:  # -n: keep only the last n updates
            keep = self._pending[offset:]
            offset = keep[0]["update_id"] if keep else self._confirmed_below
        if offset > self._confirmed_below:
            self._confirmed_below = offset
        self._pending = [u for u in self._pending if u["update_id"] >= self._confirmed_below]

    def _set_webhook(self, params: dict[str, Any]) -> bool:
        self.webhook_url = str(params.get("url") or "")
        self.webhook_secret = params.get("secret_token") if self.webhook_url else None
        if params.get("drop_pending_updates"):
            self._confirm(self._next_update_id)
        return True

    def _webhook_info(self, _params: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": self.webhook_url,
            "has_custom_certificate": False,
            "pending_update_count": len(self._pending),
        }


async def _read_params(request: web.Request) -> dict[str, Any]:
    params: dict[str, Any] = dict(request.query)
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            raise bad_request("can't parse JSON") from None
        if not isinstance(body, dict):
            raise bad_request("can't parse JSON")
        params.update(body)
    elif request.method == "POST":
        form = await request.post()
        params.update({k: v for k, v in form.items() if isinstance(v, str)})
        # An uploaded file (sendVoice's `voice`): its bytes, name and type.
        params.update(
            {k: Upload(v.filename, v.content_type, v.file.read()) for k, v in form.items()
             if isinstance(v, FileField)}
        )  # fmt: skip
    return {key: _coerce(key, value) for key, value in params.items()}


def _coerce(key: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if key in _JSON_FIELDS:
        try:
            return json.loads(value)
        except ValueError:
            raise bad_request(f"can't parse {key} JSON object") from None
    if key in _INT_FIELDS:
        try:
            return int(value)
        except ValueError:
            return value
    if key in _BOOL_FIELDS:
        return value.lower() in ("true", "1")
    return value


def _error_response(error: ApiError) -> web.Response:
    body: dict[str, Any] = {
        "ok": False,
        "error_code": error.status,
        "description": error.description,
    }
    if error.parameters:
        body["parameters"] = error.parameters
    return web.json_response(body, status=error.status)
