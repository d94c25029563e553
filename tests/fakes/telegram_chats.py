"""The chats behind the fake Bot API: messages the bot sent and edited, actions, commands,
callback queries. Each `api_*` method takes the request's params and returns the Bot API
result or raises ApiError, as Telegram would answer. An edit answers as Telegram does: "message
can't be edited" on a person's message, "message to edit not found" on an id with no message in
the chat, "message is not modified" when it shows the text already.
"""

from __future__ import annotations

import copy
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes.telegram_entities import (
    EntityError,
    command_entities,
    parse_text,
    validate_reply_markup,
)

__all__ = ["AnsweredCallback", "ApiError", "FakeChats"]

_MAX_TEXT = 4096


def _names(words: str) -> frozenset[str]:
    return frozenset(words.split())


_CHAT_ACTIONS = _names(
    "typing upload_photo record_video upload_video record_voice "
    "upload_voice upload_document choose_sticker find_location record_video_note upload_video_note"
)
_NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup are exactly the "
    "same as a current content and reply markup of the message"
)
_CALLBACK_INVALID = "query is too old and response timeout expired or query ID is invalid"


class ApiError(Exception):
    """A Bot API error answer: HTTP status, description and optional response parameters."""

    def __init__(self, status: int, description: str, **parameters: Any) -> None:
        super().__init__(description)
        self.status, self.description, self.parameters = status, description, parameters


def bad_request(description: str) -> ApiError:
    return ApiError(400, f"Bad Request: {description}")


@dataclass(frozen=True)
class AnsweredCallback:
    callback_query_id: str
    text: str | None
    show_alert: bool
    seconds_after_push: float


@dataclass(frozen=True)
class Upload:
    """A file sent in a multipart request."""

    file_name: str | None
    content_type: str | None
    data: bytes


@dataclass(frozen=True)
class SentVoice:
    chat_id: int
    message_id: int
    audio: bytes
    file_name: str | None
    reply_to: int | None  # reply_parameters' message


class FakeChats:
    def __init__(self, bot_user: dict[str, Any]) -> None:
        self.bot_user = bot_user
        self.chat_actions: list[tuple[int, str]] = []
        self.answered_callbacks: list[AnsweredCallback] = []
        self.deleted_messages: list[tuple[int, int]] = []
        self.voices: list[SentVoice] = []  # sendVoice, in order
        self.last_commands: list[dict[str, Any]] = []
        self._commands: dict[str, list[dict[str, Any]]] = {}
        self._chats: dict[int, dict[str, Any]] = {}
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._messages: dict[tuple[int, int], dict[str, Any]] = {}  # the bot's, as edited
        self._people: set[tuple[int, int]] = set()  # the people's messages: not the bot's to edit
        self._sent_order: list[tuple[int, int]] = []
        self._callbacks: dict[str, float] = {}  # query id -> monotonic time it was pushed
        self._callback_ids = itertools.count(7_000_000_001)

    def handlers(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        """Bot API method (lower case, as Telegram ignores case) -> handler."""
        return {
            "sendmessage": self.api_send_message,
            "editmessagetext": self.api_edit_message_text,
            "editmessagereplymarkup": self.api_edit_reply_markup,
            "deletemessage": self.api_delete_message,
            "sendchataction": self.api_send_chat_action,
            "setmycommands": self.api_set_my_commands,
            "getmycommands": lambda p: self._commands.get(_scope_key(p), []),
            "deletemycommands": self.api_delete_my_commands,
            "answercallbackquery": self.api_answer_callback_query,
            "sendvoice": self.api_send_voice,
        }

    # --- what users do ------------------------------------------------------------------

    def user_message(
        self, chat_id: int, user: dict[str, Any], text: str, chat_type: str
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat_id),
            "from": user,
            "chat": self._chat(chat_id, chat_type, user),
            "date": int(time.time()),
            "text": text,
        }
        if entities := command_entities(text):
            message["entities"] = entities
        self._people.add((chat_id, message["message_id"]))
        return message

    def callback_query(self, chat_id: int, user_id: int, message_id: int, data: str) -> dict:
        query_id = str(next(self._callback_ids))
        self._callbacks[query_id] = time.monotonic()
        message = self._messages.get((chat_id, message_id)) or {
            "message_id": message_id,
            "from": self.bot_user,
            "chat": self._chat(chat_id, _chat_type(chat_id), None),
            "date": int(time.time()),
            "text": "…",
        }
        return {
            "id": query_id,
            "from": {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"},
            "message": copy.deepcopy(message),
            "chat_instance": str(abs(chat_id) * 7919),
            "data": data,
        }

    # --- what the bot did ---------------------------------------------------------------

    def sent_messages(self, chat_id: int | None = None) -> list[dict[str, Any]]:
        return [
            copy.deepcopy(self._messages[key])
            for key in self._sent_order
            if chat_id is None or key[0] == chat_id
        ]

    def remember_reply(self, chat_id: int, message_id: int, target: dict[str, Any]) -> None:
        """The bot's message `message_id` was sent as a reply to `target` (telegram_groups)."""
        self._messages[(chat_id, message_id)]["reply_to_message"] = copy.deepcopy(target)

    def annotate(self, chat_id: int, message_id: int, fields: dict[str, Any]) -> None:
        """More fields on the bot's message `message_id` (a topic's thread: telegram_topics)."""
        self._messages[(chat_id, message_id)].update(fields)

    def chat_fields(self, chat_id: int, chat_type: str, fields: dict[str, Any]) -> None:
        """The chat, with more fields (a forum's `is_forum`: telegram_topics)."""
        self._chat(chat_id, chat_type, None)
        self._chats[chat_id].update(fields)

    # --- Bot API ------------------------------------------------------------------------

    def api_send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id = _chat_id(params)
        text, entities = _checked_text(params)
        markup = _checked_markup(params)
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat_id),
            "from": self.bot_user,
            "chat": self._chat(chat_id, _chat_type(chat_id), None),
            "date": int(time.time()),
            "text": text,
        }
        _set_content(message, entities, markup)
        key = (chat_id, message["message_id"])
        self._messages[key] = message
        self._sent_order.append(key)
        return copy.deepcopy(message)

    def api_send_voice(self, params: dict[str, Any]) -> dict[str, Any]:
        """A voice message (an uploaded file): recorded in `voices`; like Telegram, only an
        OGG/Opus file plays as one."""
        chat_id = _chat_id(params)
        upload = params.get("voice")
        if not isinstance(upload, Upload) or not upload.data:
            raise bad_request("there is no voice in the request")
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat_id),
            "from": self.bot_user,
            "chat": self._chat(chat_id, _chat_type(chat_id), None),
            "date": int(time.time()),
            "voice": {
                "file_id": f"voice-{chat_id}-{len(self.voices) + 1}",
                "file_unique_id": f"v{len(self.voices) + 1}",
                "duration": 1,
                "mime_type": "audio/ogg",
            },
        }
        reply = params.get("reply_parameters")
        self.voices.append(
            SentVoice(chat_id, message["message_id"], upload.data, upload.file_name,
                      reply.get("message_id") if isinstance(reply, dict) else None)
        )  # fmt: skip
        key = (chat_id, message["message_id"])
        self._messages[key] = message
        self._sent_order.append(key)
        return copy.deepcopy(message)

    def api_edit_message_text(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._message_to_edit(params)
        text, entities = _checked_text(params)
        # Like Telegram: an edit without reply_markup removes the inline keyboard.
        markup = _checked_markup(params)
        current = (message["text"], message.get("entities", []), message.get("reply_markup"))
        if (text, list(entities), markup) == current:
            raise bad_request(_NOT_MODIFIED)
        message["text"] = text
        _set_content(message, entities, markup)
        message["edit_date"] = int(time.time())
        return copy.deepcopy(message)

    def api_edit_reply_markup(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._message_to_edit(params)
        markup = _checked_markup(params)
        if markup == message.get("reply_markup"):
            raise bad_request(_NOT_MODIFIED)
        _set_content(message, message.get("entities", []), markup)
        message["edit_date"] = int(time.time())
        return copy.deepcopy(message)

    def api_delete_message(self, params: dict[str, Any]) -> bool:
        key = (_chat_id(params), int(params.get("message_id") or 0))
        if key not in self._messages or key in self.deleted_messages:
            raise bad_request("message to delete not found")
        self.deleted_messages.append(key)
        return True

    def api_send_chat_action(self, params: dict[str, Any]) -> bool:
        chat_id = _chat_id(params)
        if params.get("action") not in _CHAT_ACTIONS:
            raise bad_request("wrong parameter action in request")
        self.chat_actions.append((chat_id, str(params["action"])))
        return True

    def api_set_my_commands(self, params: dict[str, Any]) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise bad_request("can't parse commands JSON object")
        for command in commands:
            name = str(command.get("command", "")) if isinstance(command, dict) else ""
            if not (1 <= len(name) <= 32 and name.replace("_", "a").isalnum() and name.islower()):
                raise bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", ""))) <= 256:
                raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
        self._commands[_scope_key(params)] = commands
        self.last_commands = commands
        return True

    def api_delete_my_commands(self, params: dict[str, Any]) -> bool:
        self._commands.pop(_scope_key(params), None)
        return True

    def api_answer_callback_query(self, params: dict[str, Any]) -> bool:
        query_id = str(params.get("callback_query_id") or "")
        pushed_at = self._callbacks.pop(query_id, None)
        if pushed_at is None:
            raise bad_request(_CALLBACK_INVALID)
        answer = AnsweredCallback(
            query_id,
            params.get("text"),
            bool(params.get("show_alert")),
            time.monotonic() - pushed_at,
        )
        self.answered_callbacks.append(answer)
        return True

    # --- helpers ------------------------------------------------------------------------

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
        # Telegram numbers the user's and the bot's messages in a private chat in one sequence.
        return next(self._message_ids.setdefault(chat_id, itertools.count(1)))

    def _message_to_edit(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("inline_message_id"):
            raise bad_request("message to edit not found")  # inline messages aren't modelled
        key = (_chat_id(params), int(params.get("message_id") or 0))
        if key in self._people:
            raise bad_request("message can't be edited")  # as Telegram: only its own
        if key not in self._messages or key in self.deleted_messages:
            raise bad_request("message to edit not found")
        return self._messages[key]


def _chat_type(chat_id: int) -> str:
    if chat_id > 0:
        return "private"
    return "supergroup" if chat_id < -(10**12) else "group"


def _chat_id(params: dict[str, Any]) -> int:
    chat_id = params.get("chat_id")
    if chat_id in (None, ""):
        raise bad_request("chat_id is empty")
    if not isinstance(chat_id, int):
        raise bad_request("chat not found")
    return chat_id


def _checked_text(params: dict[str, Any]) -> tuple[str, tuple[dict[str, Any], ...]]:
    try:
        parsed = parse_text(str(params.get("text") or ""), params.get("parse_mode"))
    except EntityError as error:
        raise bad_request(f"can't parse entities: {error}") from None
    except ValueError:
        raise bad_request("unsupported parse_mode") from None
    if not parsed.text:
        raise bad_request("message text is empty")
    if len(parsed.text.encode("utf-16-le")) // 2 > _MAX_TEXT:  # Telegram counts UTF-16 units
        raise bad_request("message is too long")
    return parsed.text, parsed.entities


def _checked_markup(params: dict[str, Any]) -> dict[str, Any] | None:
    markup = params.get("reply_markup")
    if problem := validate_reply_markup(markup):
        raise bad_request(problem)
    if isinstance(markup, dict) and markup.get("inline_keyboard"):
        return markup
    return None


def _set_content(message: dict[str, Any], entities: Any, markup: dict[str, Any] | None) -> None:
    for key, value in (("entities", list(entities)), ("reply_markup", markup)):
        if value:
            message[key] = value
        else:
            message.pop(key, None)


def _scope_key(params: dict[str, Any]) -> str:
    scope = params.get("scope") or {"type": "default"}
    return json.dumps([scope, params.get("language_code") or ""], sort_keys=True)
