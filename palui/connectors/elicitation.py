"""A server's question during a tool call (MCP elicitation), asked in the chat.

The turn that calls a tool says who its questions go to (`ASKING`, a context variable its task
carries into every call). A form is asked one field at a time (palui/connectors/forms.py): a
card "mcp-tracker asks: …" with a button per choice, or a field the person answers with their
next message, each with Decline and Cancel. Only the turn's person can answer; an unanswered
question is cancelled after 10 minutes. While it waits, the call's time limit and the turn's
budget are paused (palui/domain/waits.py): a person is not a slow server. The question's words
are the server's: a call that asked one is untrusted (it taints the turn).

Every question is a row (`palui.db.server_questions`), so a tap is taken in any process. A
question of the 2026 protocol's input-required round also stores the call and the server's
opaque `request_state`: the server did nothing yet (it answered "input required" instead of a
result), so after a restart the answer continues the call from that state, once (the row moves
to `continued` in one conditional UPDATE), and never repeats an action the call already did.
The older protocol's question (a request on the live session) cannot outlive its process.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import mcp.types as mcp_types
from mcp.client.session import ElicitationFnT

from palui.callbacks import question
from palui.connectors.forms import Field, form_fields, typed_field
from palui.connectors.progress import ProgressNote
from palui.domain import Button, Card
from palui.domain.questions import StoredQuestion
from palui.domain.waits import paused
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports import Notes

log = get_logger(__name__)

QUESTION_TTL_S = 600.0
POLL_S = 2.0  # how often a waiting call looks for an answer taken in another process
DECLINE, CANCEL = "d", "c"


@dataclass(frozen=True, slots=True)
class Asking:
    """Who a turn's tool calls ask: the chat, the person the turn serves, the turn."""

    chat_id: int
    user_id: int
    turn_id: str | None = None


@dataclass(frozen=True, slots=True)
class Round:
    """An input-required round of a call: what continues it after a restart."""

    tool: str
    arguments: dict[str, Any]
    key: str
    request_state: str | None
    answered: dict[str, Any] = field(default_factory=dict)  # the round's other responses


@dataclass(frozen=True, slots=True)
class Pending:
    chat_id: int
    user_id: int
    text: str
    field: Field
    answer: asyncio.Future[str]


@dataclass(frozen=True, slots=True)
class Tapped:
    """What a tap or a typed answer did: the toast, the card's words and the answer's label,
    and a question nobody waits for any more whose call is to be continued here."""

    toast: str
    text: str = ""
    said: str = ""
    orphan: StoredQuestion | None = None


class QuestionRows(Protocol):
    """Where questions are kept (palui/db/server_questions.py)."""

    async def add(self, question: StoredQuestion, now: datetime, expires_at: datetime) -> None: ...
    async def get(self, token: str) -> StoredQuestion | None: ...
    async def answer(self, token: str, user_id: int, answer: str, now: datetime) -> bool: ...
    async def take(self, token: str) -> bool: ...
    async def close(self, token: str) -> None: ...
    async def continue_call(self, token: str) -> StoredQuestion | None: ...
    async def shown(self, token: str, message_id: int) -> None: ...
    async def typed_waiting(
        self, chat_id: int, user_id: int, now: datetime
    ) -> StoredQuestion | None: ...
    async def cancel_turn(self, turn_id: str) -> list[StoredQuestion]: ...


class CallClock:
    """Whether a call asked its person anything (its result is then untrusted)."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()


ASKING: ContextVar[Asking | None] = ContextVar("palui_asking", default=None)
CALL_CLOCK: ContextVar[CallClock | None] = ContextVar("palui_call_clock", default=None)


class Questions:
    """Servers' questions: the ones this process waits for, by token, and their rows."""

    def __init__(self) -> None:
        self._pending: dict[str, Pending] = {}
        self._channel: Notes | None = None
        self._repo: QuestionRows | None = None
        self._now: Callable[[], datetime] = lambda: datetime.now(UTC)

    def bind(
        self,
        channel: Notes,
        repo: QuestionRows | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._channel, self._repo = channel, repo
        self._now = now or self._now

    def asker(self, connector_id: str) -> ElicitationFnT:
        """The SDK's elicitation callback (the older protocol's request on the session)."""

        async def ask(
            context: Any, params: mcp_types.ElicitRequestParams
        ) -> mcp_types.ElicitResult:
            return await self.ask(connector_id, params)

        return ask

    async def ask(
        self,
        connector_id: str,
        params: mcp_types.ElicitRequestParams,
        round_: Round | None = None,
        content: dict[str, Any] | None = None,
    ) -> mcp_types.ElicitResult:
        asking, channel = ASKING.get(), self._channel
        fields = (
            form_fields(params.requested_schema)
            if isinstance(params, mcp_types.ElicitRequestFormParams)
            else None  # URL mode: not offered by Palui yet
        )
        if asking is None or channel is None or fields is None:
            log.info("elicitation_declined", connector=connector_id, askable=fields is not None)
            return mcp_types.ElicitResult(action="decline")
        if (clock := CALL_CLOCK.get()) is not None:
            clock.asked.set()
        got = dict(content or {})
        with paused():
            for index, wanted in enumerate(fields):
                if wanted.name in got:
                    continue
                asked = Asked(connector_id, params, fields, index, round_, got)
                answer = await self._ask_field(asking, channel, asked)
                if answer["action"] != "accept":
                    return mcp_types.ElicitResult(action=answer["action"])
                got[wanted.name] = answer["value"]
        return mcp_types.ElicitResult(action="accept", content=got)

    async def _ask_field(self, asking: Asking, channel: Notes, asked: Asked) -> dict[str, Any]:
        token = secrets.token_urlsafe(8)
        text = asked.card_text()
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[token] = Pending(asking.chat_id, asking.user_id, text, asked.field, future)
        if self._repo is not None:
            now = self._now()
            row = StoredQuestion(
                token,
                asking.chat_id,
                asking.user_id,
                asking.turn_id,
                asked.connector_id,
                text,
                asked.call_json(),
                typed_field=asked.field.typed_json(),
            )
            await self._repo.add(row, now, now + timedelta(seconds=QUESTION_TTL_S))
        try:
            card = await channel.send_card(asking.chat_id, Card(text, rows=asked.rows(token)))
            if self._repo is not None:
                await self._repo.shown(token, card)
            async with asyncio.timeout(QUESTION_TTL_S):
                return json.loads(await self._answer_of(token, future))
        except (TimeoutError, ChannelError):
            if self._repo is not None:
                await self._repo.close(token)
            return {"action": "cancel"}
        finally:
            self._pending.pop(token, None)

    async def _answer_of(self, token: str, future: asyncio.Future[str]) -> str:
        """The answer given in this process, or one taken in another (read from its row)."""
        while True:
            done, _ = await asyncio.wait({future}, timeout=POLL_S if self._repo else None)
            if done:
                if self._repo is not None:
                    await self._repo.take(token)
                return future.result()
            assert self._repo is not None
            row = await self._repo.get(token)
            if row is not None and row.answer is not None and await self._repo.take(token):
                return row.answer

    def progress_note(self, label: str) -> ProgressNote | None:
        """Where a call of the running turn shows its progress (None: no chat to show it in)."""
        asking, channel = ASKING.get(), self._channel
        return (
            None
            if asking is None or channel is None
            else ProgressNote(channel, asking.chat_id, label)
        )

    async def wants_text(self, chat_id: int, user_id: int) -> bool:
        """Whether this person's next message here answers a question (asked in any process)."""
        return await self._typed(chat_id, user_id) is not None

    async def answer_text(self, chat_id: int, user_id: int, text: str) -> Tapped:
        found = await self._typed(chat_id, user_id)
        if found is None:
            return Tapped("This question is no longer open.")
        token, wanted, stored = found
        value = wanted.read(text)
        if value is None:
            return Tapped(f"That is not {wanted.prompt()}")
        answer = {"action": "accept", "value": value}
        return await self._answered(token, user_id, answer, text, stored)

    async def stopped(self, turn_id: str) -> None:
        """The turn was stopped (/stop): its open questions are cancelled, and their cards say
        so, so a later tap or message answers nothing."""
        if self._repo is None:
            return
        for asked in await self._repo.cancel_turn(turn_id):
            if self._channel is None or asked.message_id is None:
                continue
            card = Card(f"{asked.text}\n→ cancelled: the turn was stopped")
            try:
                await self._channel.edit_card(asked.chat_id, asked.message_id, card)
            except ChannelError as exc:
                log.warning("question_card_not_edited", error=str(exc))

    async def answer(self, token: str, user_id: int, choice: str) -> Tapped:
        """A tap on a question's button."""
        pending = self._pending.get(token)
        if pending is not None:
            if user_id != pending.user_id:
                return Tapped("Only the person this turn is for can answer.")
            return await self._answered(token, user_id, _choice(pending.field, choice), "")
        stored = await self._repo.get(token) if self._repo is not None else None
        if stored is None or stored.answer is not None:
            return Tapped("This question is no longer open.")
        if user_id != stored.user_id:
            return Tapped("Only the person this turn is for can answer.")
        asked = Asked.of(stored)
        if asked is None:
            return Tapped("This question is no longer open.")
        return await self._answered(token, user_id, _choice(asked.field, choice), "", stored)

    async def _answered(
        self,
        token: str,
        user_id: int,
        answer: dict[str, Any],
        typed: str,
        stored: StoredQuestion | None = None,
    ) -> Tapped:
        encoded = json.dumps(answer)
        if self._repo is not None and not await self._repo.answer(
            token, user_id, encoded, self._now()
        ):
            return Tapped("This question is no longer open.")
        pending = self._pending.get(token)
        said = _said(answer, typed, pending.field if pending else None, stored)
        if pending is not None:
            if not pending.answer.done():
                pending.answer.set_result(encoded)
            return Tapped("Answered.", pending.text, said)
        assert self._repo is not None and stored is not None
        orphan = await self._repo.continue_call(token)
        return Tapped("Answered.", stored.text, said, orphan)

    async def _typed(
        self, chat_id: int, user_id: int
    ) -> tuple[str, Field, StoredQuestion | None] | None:
        """The question waiting for this person's next message: its token and field (and its
        row, when the database is the one to ask: it may be another process's question)."""
        if self._repo is not None:
            stored = await self._repo.typed_waiting(chat_id, user_id, self._now())
            wanted = typed_field(stored.typed_field) if stored is not None else None
            if stored is None or wanted is None:
                return None
            return stored.token, wanted, stored
        for token, pending in self._pending.items():
            mine = (pending.chat_id, pending.user_id) == (chat_id, user_id)
            if mine and pending.field.typed and not pending.answer.done():
                return token, pending.field, None
        return None


@dataclass(frozen=True, slots=True)
class Asked:
    """One field of a server's form, as asked (and as stored for a restart)."""

    connector_id: str
    params: mcp_types.ElicitRequestParams
    fields: tuple[Field, ...]
    index: int
    round_: Round | None
    content: dict[str, Any]

    @property
    def field(self) -> Field:
        return self.fields[self.index]

    def card_text(self) -> str:
        said = self.params.message
        text = f"❓ {self.connector_id} asks (the server's words, not Palui's):\n{said}"
        if len(self.fields) > 1:
            text += f"\n\n({self.index + 1}/{len(self.fields)}) {self.field.title}"
        if self.field.typed:
            text += f"\n{self.field.prompt()}"
        return text

    def rows(self, token: str) -> tuple[tuple[Button, ...], ...]:
        rows: list[tuple[Button, ...]] = [
            (Button(label, question(token, str(i))),) for i, label in enumerate(self.field.labels)
        ]
        decline, cancel = question(token, DECLINE), question(token, CANCEL)
        rows.append((Button("Decline", decline), Button("Cancel", cancel)))
        return tuple(rows)

    def call_json(self) -> str | None:
        if self.round_ is None:
            return None
        r = self.round_
        return json.dumps(
            {
                "tool": r.tool,
                "arguments": r.arguments,
                "key": r.key,
                "request_state": r.request_state,
                "answered": r.answered,
                "params": self.params.model_dump(mode="json", by_alias=True, exclude_none=True),
                "index": self.index,
                "content": self.content,
            }
        )

    @staticmethod
    def of(stored: StoredQuestion) -> Asked | None:
        if stored.call is None:
            return None
        call = json.loads(stored.call)
        params = mcp_types.ElicitRequestFormParams.model_validate(call["params"])
        fields = form_fields(params.requested_schema)
        if fields is None:
            return None
        round_ = Round(
            call["tool"], call["arguments"], call["key"], call["request_state"], call["answered"]
        )
        return Asked(stored.connector_id, params, fields, call["index"], round_, call["content"])


def _choice(field: Field, choice: str) -> dict[str, Any]:
    if choice == DECLINE:
        return {"action": "decline"}
    if choice == CANCEL or not choice.isdecimal() or int(choice) >= len(field.values):
        return {"action": "cancel"}
    return {"action": "accept", "value": field.values[int(choice)]}


def _said(
    answer: dict[str, Any], typed: str, field: Field | None, stored: StoredQuestion | None
) -> str:
    if answer["action"] != "accept":
        return {"decline": "declined"}.get(answer["action"], "cancelled")
    if typed:
        return typed[:200]
    if field is None and stored is not None and (asked := Asked.of(stored)) is not None:
        field = asked.field
    if field is not None and answer["value"] in field.values:
        return field.labels[field.values.index(answer["value"])]
    return str(answer["value"])[:200]
