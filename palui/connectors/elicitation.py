"""A server's question during a tool call (MCP elicitation), asked in the chat.

The turn that calls a tool says who its questions go to (`asking`, a context variable its task
carries into every call); a question then becomes a card, "mcp-tracker asks: …", with one button
per choice of the field asked (an enum's values, or Yes/No for a boolean) and Decline and Cancel.
Only the turn's person can answer; an unanswered question is cancelled after 10 minutes. While
it waits, the call's own time limit is paused (`CallClock`): a person is not a slow server.
The question's words are the server's: a call that asked one is untrusted (it taints the turn).

Limits of this version: the question lives in this process only (a restart cancels it), a form
of several fields or of free text is declined, and a question the server sends outside the
call's own request (the older protocol's server-to-client request, answered on the session's
task) is declined unless the call's context reaches it.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp.types as mcp_types
from mcp.client.session import ElicitationFnT

from palui.callbacks import question
from palui.domain import Button, Card
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports import Cards

log = get_logger(__name__)

QUESTION_TTL_S = 600.0
MAX_CHOICES = 8
DECLINE, CANCEL = "d", "c"


@dataclass(frozen=True, slots=True)
class Asking:
    """Who a turn's tool calls ask: the chat and the person the turn serves."""

    chat_id: int
    user_id: int


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    values: tuple[Any, ...]
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Pending:
    chat_id: int
    user_id: int
    text: str
    field: Field
    answer: asyncio.Future[str]


class CallClock:
    """A call's time limit (an `asyncio.Timeout`), paused while a person is asked, and whether
    the call asked anything (its result is then untrusted)."""

    def __init__(self, timeout: asyncio.Timeout) -> None:
        self._timeout = timeout
        self.asked = asyncio.Event()

    @contextmanager
    def paused(self) -> Iterator[None]:
        self.asked.set()
        when = self._timeout.when()
        loop = asyncio.get_running_loop()
        left = None if when is None else max(0.0, when - loop.time())
        self._timeout.reschedule(None)
        try:
            yield
        finally:
            self._timeout.reschedule(None if left is None else loop.time() + left)


ASKING: ContextVar[Asking | None] = ContextVar("palui_asking", default=None)
CALL_CLOCK: ContextVar[CallClock | None] = ContextVar("palui_call_clock", default=None)


class Questions:
    """Questions waiting for a tap, by token (one per process)."""

    def __init__(self) -> None:
        self._pending: dict[str, Pending] = {}
        self._channel: Cards | None = None

    def bind(self, channel: Cards) -> None:
        self._channel = channel

    def asker(self, connector_id: str) -> ElicitationFnT:
        """The SDK's elicitation callback for one connector."""

        async def ask(
            context: Any, params: mcp_types.ElicitRequestParams
        ) -> mcp_types.ElicitResult:
            return await self.ask(connector_id, params)

        return ask

    async def ask(
        self, connector_id: str, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        asking, clock, channel = ASKING.get(), CALL_CLOCK.get(), self._channel
        field = _one_choice(params)
        if asking is None or channel is None or field is None:
            log.info("elicitation_declined", connector=connector_id, askable=field is not None)
            return mcp_types.ElicitResult(action="decline")
        token = secrets.token_urlsafe(8)
        text = f"❓ {connector_id} asks (the server's words, not Palui's):\n{params.message}"
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[token] = Pending(asking.chat_id, asking.user_id, text, field, future)
        rows: list[tuple[Button, ...]] = [
            (Button(label, question(token, str(i))),) for i, label in enumerate(field.labels)
        ]
        rows.append(
            (Button("Decline", question(token, DECLINE)), Button("Cancel", question(token, CANCEL)))
        )
        try:
            with clock.paused() if clock is not None else _nothing():
                await channel.send_card(asking.chat_id, Card(text, rows=tuple(rows)))
                async with asyncio.timeout(QUESTION_TTL_S):
                    choice = await future
        except TimeoutError:
            choice = CANCEL
        except ChannelError:
            return mcp_types.ElicitResult(action="cancel")
        finally:
            self._pending.pop(token, None)
        if choice == DECLINE:
            return mcp_types.ElicitResult(action="decline")
        if choice == CANCEL or not choice.isdecimal() or int(choice) >= len(field.values):
            return mcp_types.ElicitResult(action="cancel")
        return mcp_types.ElicitResult(
            action="accept", content={field.name: field.values[int(choice)]}
        )

    def answer(self, token: str, user_id: int, choice: str) -> tuple[str, Pending | None]:
        """A tap on a question: what to toast, and the question answered (None: not taken)."""
        pending = self._pending.get(token)
        if pending is None or pending.answer.done():
            return "This question is no longer open.", None
        if user_id != pending.user_id:
            return "Only the person this turn is for can answer.", None
        pending.answer.set_result(choice)
        return "Answered.", pending


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _one_choice(params: mcp_types.ElicitRequestParams) -> Field | None:
    """The one field a form asks for, when its answers can be buttons (an enum or a boolean)."""
    if not isinstance(params, mcp_types.ElicitRequestFormParams):
        return None  # URL mode: not offered by Palui yet
    schema = params.requested_schema
    properties = schema.get("properties") or {}
    if len(properties) != 1:
        return None
    name, spec = next(iter(properties.items()))
    if not isinstance(spec, dict):
        return None
    if spec.get("type") == "boolean":
        return Field(name, (True, False), ("Yes", "No"))
    values = spec.get("enum")
    if isinstance(values, list) and 0 < len(values) <= MAX_CHOICES:
        names = spec.get("enumNames")
        shown = names if isinstance(names, list) and len(names) == len(values) else values
        return Field(name, tuple(values), tuple(str(label)[:60] for label in shown))
    options = spec.get("oneOf")
    if isinstance(options, list) and 0 < len(options) <= MAX_CHOICES:
        found = [o for o in options if isinstance(o, dict) and "const" in o]
        if len(found) == len(options):
            titles = tuple(str(o.get("title", o["const"]))[:60] for o in found)
            return Field(name, tuple(o["const"] for o in found), titles)
    return None
