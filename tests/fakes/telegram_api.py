"""A fake Telegram Bot API server on loopback that the real python-telegram-bot talks to.

    async with FakeTelegram() as fake:
        bot = telegram.Bot(fake.token, base_url=fake.base_url)
        update_id = fake.push_text(chat_id=42, user_id=42, text="hi")
        ...
        [reply] = await fake.wait_for_messages(42, count=1)

It keeps the behaviours Palui's reliability rests on: getUpdates long-polls and redelivers every
update until a later call's offset confirms it; texts are checked for length and HTML after
entity parsing; editing to the same content is "message is not modified"; `flood()` answers 429
with retry_after. The server is plain HTTP, so a bot in another process can use it too.
Webhook delivery is not simulated: setWebhook only changes what getUpdates and getWebhookInfo say.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiohttp import web

from tests.fakes.telegram_entities import (
    EntityError,
    command_entities,
    parse_text,
    validate_reply_markup,
)

__all__ = ["DEFAULT_TOKEN", "AnsweredCallback", "FakeTelegram", "RecordedRequest"]

DEFAULT_TOKEN = "123456789:AAHfake-Token_for-Palui-tests0123456"
_MAX_TEXT = 4096
_CHAT_ACTIONS = frozenset(
    "typing upload_photo record_video upload_video record_voice upload_voice upload_document "
    "choose_sticker find_location record_video_note upload_video_note".split()
)
# Form-encoded values arrive as strings; PTB JSON-encodes every non-string parameter.
_JSON_FIELDS = frozenset(
    "reply_markup entities commands scope allowed_updates link_preview_options reply_parameters"
    " caption_entities".split()
)
_INT_FIELDS = frozenset(
    "chat_id message_id offset limit timeout user_id reply_to_message_id message_thread_id "
    "cache_time max_connections".split()
)
_BOOL_FIELDS = frozenset(
    "disable_notification protect_content show_alert drop_pending_updates "
    "disable_web_page_preview allow_sending_without_reply".split()
)
_NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup are exactly the "
    "same as a current content and reply markup of the message"
)
_CALLBACK_INVALID = "query is too old and response timeout expired or query ID is invalid"


@dataclass(frozen=True)
class RecordedRequest:
    """One Bot API call as the fake received it (time is `time.monotonic()`)."""

    method: str
    params: dict[str, Any]
    at: float


@dataclass(frozen=True)
class AnsweredCallback:
    callback_query_id: str
    text: str | None
    show_alert: bool
    seconds_after_push: float


class _ApiError(Exception):
    def __init__(self, status: int, description: str, **parameters: Any) -> None:
        super().__init__(description)
        self.status, self.description, self.parameters = status, description, parameters


def _bad(description: str) -> _ApiError:
    return _ApiError(400, f"Bad Request: {description}")


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
        self.requests: list[RecordedRequest] = []
        self.flood_rejections: list[RecordedRequest] = []
        self.chat_actions: list[tuple[int, str]] = []
        self.answered_callbacks: list[AnsweredCallback] = []
        self.deleted_messages: list[tuple[int, int]] = []
        self.webhook_url = ""
        self._commands: dict[str, list[dict[str, Any]]] = {}
        self._last_commands: list[dict[str, Any]] = []
        self._next_update_id = 100_001
        self._pending: list[dict[str, Any]] = []  # unconfirmed updates, by update_id
        self._delivered: Counter[int] = Counter()
        self._confirmed_below = 0
        self._poll_generation = 0
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._chats: dict[int, dict[str, Any]] = {}
        self._messages: dict[tuple[int, int], dict[str, Any]] = {}  # bot's, current state
        self._sent_order: list[tuple[int, int]] = []
        self._callbacks: dict[str, float] = {}  # query id -> monotonic time pushed
        self._callback_ids = itertools.count(7_000_000_001)
        self._floods: dict[str, list[int]] = {}  # method -> [calls left to reject, retry_after]
        self._changed_event = asyncio.Event()
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._handlers: dict[str, Callable[[dict[str, Any]], Any]] = {
            "getme": lambda _p: self.bot_user,
            "sendmessage": self._send_message,
            "editmessagetext": self._edit_message_text,
            "editmessagereplymarkup": self._edit_reply_markup,
            "deletemessage": self._delete_message,
            "sendchataction": self._send_chat_action,
            "setmycommands": self._set_my_commands,
            "getmycommands": lambda p: self._commands.get(self._scope_key(p), []),
            "deletemycommands": self._delete_my_commands,
            "answercallbackquery": self._answer_callback_query,
            "setwebhook": self._set_webhook,
            "deletewebhook": self._delete_webhook,
            "getwebhookinfo": self._webhook_info,
            "logout": lambda _p: True,
            "close": lambda _p: True,
        }

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._handle)
        # A client that gives up on a long poll must not leave a handler that swallows updates.
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, shutdown_timeout=1.0)
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
        user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"}
        if username:
            user["username"] = username
        chat = self._chat(chat_id, chat_type, user)
        now = int(time.time())
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat_id),
            "from": user,
            "chat": chat,
            "date": now,
            "text": text,
        }
        if entities := command_entities(text):
            message["entities"] = entities
        if edited:
            message["edit_date"] = now
        return self.push_update({"edited_message" if edited else "message": message})

    def push_callback(self, chat_id: int, user_id: int, message_id: int, data: str) -> int:
        query_id = str(next(self._callback_ids))
        self._callbacks[query_id] = time.monotonic()
        message = self._messages.get((chat_id, message_id)) or {
            "message_id": message_id,
            "from": self.bot_user,
            "chat": self._chat(chat_id, "private" if chat_id > 0 else "group", None),
            "date": int(time.time()),
            "text": "…",
        }
        query = {
            "id": query_id,
            "from": {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"},
            "message": copy.deepcopy(message),
            "chat_instance": str(abs(chat_id) * 7919),
            "data": data,
        }
        return self.push_update({"callback_query": query})

    def flood(self, method: str = "sendMessage", times: int = 1, retry_after: int = 2) -> None:
        """Make the next `times` calls of `method` fail with 429 Too Many Requests."""
        self._floods[method.lower()] = [times, retry_after]

    # --- test side: what the bot did ----------------------------------------------------

    def sent_messages(self, chat_id: int | None = None) -> list[dict[str, Any]]:
        """Every message the bot sent (deleted ones too), oldest first, as currently edited."""
        return [
            copy.deepcopy(self._messages[key])
            for key in self._sent_order
            if chat_id is None or key[0] == chat_id
        ]

    def visible_messages(self, chat_id: int | None = None) -> list[dict[str, Any]]:
        """The bot's messages still in the chat (not deleted)."""
        gone = set(self.deleted_messages)
        return [
            m for m in self.sent_messages(chat_id) if (m["chat"]["id"], m["message_id"]) not in gone
        ]

    @property
    def commands(self) -> list[dict[str, Any]]:
        """The command list of the last setMyCommands call."""
        return copy.deepcopy(self._last_commands)

    def delivered_count(self, update_id: int) -> int:
        """How many getUpdates answers included this update."""
        return self._delivered[update_id]

    def is_confirmed(self, update_id: int) -> bool:
        return update_id < self._confirmed_below

    async def wait_for_messages(
        self, chat_id: int, count: int, timeout: float = 10
    ) -> list[dict[str, Any]]:
        await self._wait(
            lambda: len(self.sent_messages(chat_id)) >= count,
            timeout,
            lambda: f"{count} messages to chat {chat_id}; got {self.sent_messages(chat_id)}",
        )
        return self.sent_messages(chat_id)

    async def wait_for_request(
        self,
        method: str,
        predicate: Callable[[dict[str, Any]], bool] | None = None,
        timeout: float = 10,
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

    async def wait_until_confirmed(self, update_id: int, timeout: float = 10) -> None:
        await self._wait(
            lambda: self.is_confirmed(update_id),
            timeout,
            lambda: f"getUpdates to confirm update {update_id} (offset {self._confirmed_below})",
        )

    async def wait_for_delivery(self, update_id: int, timeout: float = 10) -> None:
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
        self, ready: Callable[[], bool], timeout: float, what: Callable[[], str]
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
        except _ApiError as error:
            return _error_response(error)
        recorded = RecordedRequest(method, params, time.monotonic())
        self.requests.append(recorded)
        self._changed()
        if token != self.token:
            # Telegram: 404 for a token that isn't one, 401 for a well-formed wrong token.
            status = 401 if ":" in token else 404
            return _error_response(
                _ApiError(status, "Unauthorized" if status == 401 else "Not Found")
            )
        handler = self._handlers.get(method.lower())
        if handler is None and method.lower() != "getupdates":
            return _error_response(_ApiError(404, "Not Found"))
        if (flood := self._floods.get(method.lower())) and flood[0] > 0:
            flood[0] -= 1
            self.flood_rejections.append(recorded)
            retry_after = flood[1]
            return _error_response(
                _ApiError(
                    429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after
                )
            )
        try:
            if handler is None:
                result = await self._get_updates(params)
            else:
                result = handler(params)
        except _ApiError as error:
            return _error_response(error)
        finally:
            self._changed()
        return web.json_response({"ok": True, "result": result})

    async def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self.webhook_url:
            raise _ApiError(
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
        while not self._pending and not self._closing and loop.time() < deadline:
            try:
                async with asyncio.timeout_at(deadline):
                    await self._changed_event.wait()
            except TimeoutError:
                break
            if generation != self._poll_generation:
                raise _ApiError(
                    409,
                    "Conflict: terminated by other getUpdates request; "
                    "make sure that only one bot instance is running",
                )
        batch = [] if self._closing else self._pending[:limit]
        self._delivered.update(u["update_id"] for u in batch)
        return copy.deepcopy(batch)

    def _confirm(self, offset: int) -> None:
        if offset < 0:  # -n: keep only the last n updates
            keep = self._pending[offset:]
            offset = keep[0]["update_id"] if keep else self._confirmed_below
        if offset > self._confirmed_below:
            self._confirmed_below = offset
        self._pending = [u for u in self._pending if u["update_id"] >= self._confirmed_below]

    def _chat(self, chat_id: int, chat_type: str, user: dict[str, Any] | None) -> dict[str, Any]:
        if chat_id not in self._chats:
            chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
            if chat_type == "private":
                chat["first_name"] = (user or {}).get("first_name", f"User{chat_id}")
                if user and "username" in user:
                    chat["username"] = user["username"]
            else:
                chat["title"] = f"Chat {chat_id}"
            self._chats[chat_id] = chat
        return dict(self._chats[chat_id])

    def _next_message_id(self, chat_id: int) -> int:
        # In a private chat Telegram numbers the user's and the bot's messages in one sequence.
        return next(self._message_ids.setdefault(chat_id, itertools.count(1)))

    def _chat_id(self, params: dict[str, Any]) -> int:
        chat_id = params.get("chat_id")
        if chat_id in (None, ""):
            raise _bad("chat_id is empty")
        if not isinstance(chat_id, int):
            raise _bad("chat not found")
        return chat_id

    def _checked_text(self, params: dict[str, Any]) -> tuple[str, tuple[dict[str, Any], ...]]:
        try:
            parsed = parse_text(str(params.get("text") or ""), params.get("parse_mode"))
        except EntityError as error:
            raise _bad(f"can't parse entities: {error}") from None
        except ValueError:
            raise _bad("unsupported parse_mode") from None
        if not parsed.text:
            raise _bad("message text is empty")
        if len(parsed.text) > _MAX_TEXT:
            raise _bad("message is too long")
        return parsed.text, parsed.entities

    def _checked_markup(self, params: dict[str, Any]) -> dict[str, Any] | None:
        markup = params.get("reply_markup")
        if problem := validate_reply_markup(markup):
            raise _bad(problem)
        if isinstance(markup, dict) and markup.get("inline_keyboard"):
            return markup
        return None

    def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id = self._chat_id(params)
        text, entities = self._checked_text(params)
        markup = self._checked_markup(params)
        kind = "private" if chat_id > 0 else "supergroup" if chat_id < -(10**12) else "group"
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat_id),
            "from": self.bot_user,
            "chat": self._chat(chat_id, kind, None),
            "date": int(time.time()),
            "text": text,
        }
        _set_content(message, entities, markup)
        key = (chat_id, message["message_id"])
        self._messages[key] = message
        self._sent_order.append(key)
        return copy.deepcopy(message)

    def _message_to_edit(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("inline_message_id"):
            raise _bad("message to edit not found")  # inline messages aren't modelled
        key = (self._chat_id(params), int(params.get("message_id") or 0))
        if key not in self._messages or key in self.deleted_messages:
            raise _bad("message to edit not found")
        return self._messages[key]

    def _edit_message_text(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._message_to_edit(params)
        text, entities = self._checked_text(params)
        # Like Telegram: an edit without reply_markup removes the inline keyboard.
        markup = self._checked_markup(params)
        if (text, list(entities), markup) == (
            message["text"],
            message.get("entities", []),
            message.get("reply_markup"),
        ):
            raise _bad(_NOT_MODIFIED)
        message["text"] = text
        _set_content(message, entities, markup)
        message["edit_date"] = int(time.time())
        return copy.deepcopy(message)

    def _edit_reply_markup(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._message_to_edit(params)
        markup = self._checked_markup(params)
        if markup == message.get("reply_markup"):
            raise _bad(_NOT_MODIFIED)
        _set_content(message, message.get("entities", []), markup)
        message["edit_date"] = int(time.time())
        return copy.deepcopy(message)

    def _delete_message(self, params: dict[str, Any]) -> bool:
        key = (self._chat_id(params), int(params.get("message_id") or 0))
        if key not in self._messages or key in self.deleted_messages:
            raise _bad("message to delete not found")
        self.deleted_messages.append(key)
        return True

    def _send_chat_action(self, params: dict[str, Any]) -> bool:
        chat_id = self._chat_id(params)
        if params.get("action") not in _CHAT_ACTIONS:
            raise _bad("wrong parameter action in request")
        self.chat_actions.append((chat_id, str(params["action"])))
        return True

    def _scope_key(self, params: dict[str, Any]) -> str:
        scope = params.get("scope") or {"type": "default"}
        return json.dumps([scope, params.get("language_code") or ""], sort_keys=True)

    def _set_my_commands(self, params: dict[str, Any]) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise _bad("can't parse commands JSON object")
        for command in commands:
            name = str(command.get("command", "")) if isinstance(command, dict) else ""
            if not (1 <= len(name) <= 32 and name.replace("_", "a").isalnum() and name.islower()):
                raise _bad("BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", ""))) <= 256:
                raise _bad("BOT_COMMAND_DESCRIPTION_INVALID")
        self._commands[self._scope_key(params)] = commands
        self._last_commands = commands
        return True

    def _delete_my_commands(self, params: dict[str, Any]) -> bool:
        self._commands.pop(self._scope_key(params), None)
        return True

    def _answer_callback_query(self, params: dict[str, Any]) -> bool:
        query_id = str(params.get("callback_query_id") or "")
        pushed_at = self._callbacks.pop(query_id, None)
        if pushed_at is None:
            raise _bad(_CALLBACK_INVALID)
        self.answered_callbacks.append(
            AnsweredCallback(
                query_id,
                params.get("text"),
                bool(params.get("show_alert")),
                time.monotonic() - pushed_at,
            )
        )
        return True

    def _set_webhook(self, params: dict[str, Any]) -> bool:
        self.webhook_url = str(params.get("url") or "")
        if params.get("drop_pending_updates"):
            self._confirm(self._next_update_id)
        return True

    def _delete_webhook(self, params: dict[str, Any]) -> bool:
        return self._set_webhook({**params, "url": ""})

    def _webhook_info(self, _params: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": self.webhook_url,
            "has_custom_certificate": False,
            "pending_update_count": len(self._pending),
        }


def _set_content(message: dict[str, Any], entities: Any, markup: dict[str, Any] | None) -> None:
    for key, value in (("entities", list(entities)), ("reply_markup", markup)):
        if value:
            message[key] = value
        else:
            message.pop(key, None)


async def _read_params(request: web.Request) -> dict[str, Any]:
    params: dict[str, Any] = dict(request.query)
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            raise _bad("can't parse JSON") from None
        if not isinstance(body, dict):
            raise _bad("can't parse JSON")
        params.update(body)
    elif request.method == "POST":
        form = await request.post()
        params.update({k: v for k, v in form.items() if isinstance(v, str)})
    return {key: _coerce(key, value) for key, value in params.items()}


def _coerce(key: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if key in _JSON_FIELDS:
        try:
            return json.loads(value)
        except ValueError:
            raise _bad(f"can't parse {key} JSON object") from None
    if key in _INT_FIELDS:
        try:
            return int(value)
        except ValueError:
            return value
    if key in _BOOL_FIELDS:
        return value.lower() in ("true", "1")
    return value


def _error_response(error: _ApiError) -> web.Response:
    body: dict[str, Any] = {
        "ok": False,
        "error_code": error.status,
        "description": error.description,
    }
    if error.parameters:
        body["parameters"] = error.parameters
    return web.json_response(body, status=error.status)
