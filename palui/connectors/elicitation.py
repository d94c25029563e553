"""A server's question during a tool call (MCP elicitation), asked in the chat.

The turn that calls a tool says who its questions go to (`ASKING`, a context variable its task
carries into every call): a chat turn's person, or a job run's owner in the job's chat (the
card then headed with the job's name). A form is asked one field at a time
(palui/connectors/asked.py): a card "mcp-tracker asks: …" with a button per choice, or a field
the person answers with their next message, each with Decline and Cancel. A page to open (URL
mode, palui/connectors/url_questions.py) is a card with the address, "✅ Done", Decline and
Cancel; the server's completion notice answers it too. Only the turn's person can answer; an
unanswered question is cancelled after 10 minutes. While it waits, the call's time limit and
the turn's budget are paused (palui/domain/waits.py): a person is not a slow server. The
question's words are the server's: a call that asked one is untrusted (it taints the turn).

Every question is a row (`palui.db.server_questions`), so a tap is taken in any process. A
question of the 2026 protocol's input-required round also stores the call and the server's
opaque `request_state`: the server did nothing yet (it answered "input required" instead of a
result), so after a restart the answer continues the call from that state, once (the row moves
to `continued` in one conditional UPDATE), and never repeats an action the call already did.
The older protocol's question (a request on the live session) cannot outlive its process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import mcp.types as mcp_types
from mcp.client.session import ElicitationFnT

from palui.connectors.asked import Asked, Round
from palui.connectors.forms import Field, form_fields, typed_field
from palui.connectors.progress import ProgressNote
from palui.connectors.url_questions import PageAsked, page_problem, refused_note
from palui.domain import Card
from palui.domain.questions import StoredQuestion
from palui.domain.waits import paused
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports import Notes

log = get_logger(__name__)

QUESTION_TTL_S = 600.0
POLL_S = 2.0  # how often a waiting call looks for an answer taken in another process
BY_SERVER = "server"  # an answer's "by": the server said its page was done (URL mode)

Question = Asked | PageAsked  # one question as asked: a form's field, or a page to open


@dataclass(frozen=True, slots=True)
class Asking:
    """Who a turn's tool calls ask: the chat, the person the turn serves, the turn, and the
    heading its questions' cards carry (a job run's: the job's name)."""

    chat_id: int
    user_id: int
    turn_id: str | None = None
    heading: str | None = None


@dataclass(frozen=True, slots=True)
class Pending:
    chat_id: int
    user_id: int
    text: str
    asked: Question
    answer: asyncio.Future[str]

    @property
    def field(self) -> Field | None:
        """The form field a typed answer is for (None: not a form's question)."""
        return self.asked.field if isinstance(self.asked, Asked) else None


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
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            return await self._ask_page(connector_id, params, round_)
        fields = form_fields(params.requested_schema)
        if asking is None or channel is None or fields is None:
            log.info("elicitation_declined", connector=connector_id, askable=fields is not None)
            return mcp_types.ElicitResult(action="decline")
        _mark_asked()
        got = dict(content or {})
        with paused():
            for index, wanted in enumerate(fields):
                if wanted.name in got:
                    continue
                asked = Asked(connector_id, params, fields, index, round_, got)
                answer = await self._ask_one(asking, channel, asked)
                if answer["action"] != "accept":
                    return mcp_types.ElicitResult(action=answer["action"])
                got[wanted.name] = answer["value"]
        return mcp_types.ElicitResult(action="accept", content=got)

    async def _ask_page(
        self, connector_id: str, params: mcp_types.ElicitRequestURLParams, round_: Round | None
    ) -> mcp_types.ElicitResult:
        """URL mode: the person opens the page (or not); the server hears only that."""
        asking, channel = ASKING.get(), self._channel
        if asking is None or channel is None:
            log.info("elicitation_declined", connector=connector_id, askable=True)
            return mcp_types.ElicitResult(action="decline")
        if (problem := page_problem(params.url)) is not None:
            log.info("page_question_refused", connector=connector_id, problem=problem)
            with contextlib.suppress(ChannelError):
                await channel.send_card(asking.chat_id, Card(refused_note(connector_id, problem)))
            return mcp_types.ElicitResult(action="decline")
        _mark_asked()
        with paused():
            answer = await self._ask_one(asking, channel, PageAsked(connector_id, params, round_))
        return mcp_types.ElicitResult(action=answer["action"])

    def completed(self, connector_id: str, elicitation_id: str) -> None:
        """The server's `notifications/elicitation/complete`: the page it asked the person to
        open is done with, which answers the question (an unknown id is ignored, as the
        protocol asks). Only resolves the wait: the dispatcher delivering it must not block."""
        for pending in self._pending.values():
            asked = pending.asked
            if (
                isinstance(asked, PageAsked)
                and asked.connector_id == connector_id
                and asked.params.elicitation_id == elicitation_id
                and not pending.answer.done()
            ):
                pending.answer.set_result(json.dumps({"action": "accept", "by": BY_SERVER}))

    async def _ask_one(self, asking: Asking, channel: Notes, asked: Question) -> dict[str, Any]:
        token = secrets.token_urlsafe(8)
        text = asked.card_text()
        if asking.heading:
            text = f"{asking.heading}\n{text}"
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[token] = Pending(asking.chat_id, asking.user_id, text, asked, future)
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
                typed_field=asked.field.typed_json() if isinstance(asked, Asked) else None,
            )
            await self._repo.add(row, now, now + timedelta(seconds=QUESTION_TTL_S))
        try:
            message_id = await channel.send_card(asking.chat_id, Card(text, rows=asked.rows(token)))
            if self._repo is not None:
                await self._repo.shown(token, message_id)
            async with asyncio.timeout(QUESTION_TTL_S):
                answer: dict[str, Any] = json.loads(await self._answer_of(token, future))
            if answer.pop("by", None) == BY_SERVER:  # nobody tapped: the card says who ended it
                done = Card(f"{text}\n→ done ({asked.connector_id} says the page is finished)")
                with contextlib.suppress(ChannelError):
                    await channel.edit_card(asking.chat_id, message_id, done)
            return answer
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
                answer = future.result()
                if self._repo is not None:
                    answer = await self._record_server_answer(token, answer)
                    await self._repo.take(token)
                return answer
            assert self._repo is not None
            row = await self._repo.get(token)
            if row is not None and row.answer is not None and await self._repo.take(token):
                return row.answer

    async def _record_server_answer(self, token: str, answer: str) -> str:
        """A server's completion notice is the question's answer in its row too (so a later tap
        finds it answered); a person who answered first in another process wins."""
        pending = self._pending.get(token)
        if self._repo is None or pending is None or json.loads(answer).get("by") != BY_SERVER:
            return answer
        if await self._repo.answer(token, pending.user_id, answer, self._now()):
            return answer
        row = await self._repo.get(token)
        return row.answer if row is not None and row.answer is not None else answer

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
            return await self._answered(token, user_id, pending.asked.choice(choice), "")
        stored = await self._repo.get(token) if self._repo is not None else None
        if stored is None or stored.answer is not None:
            return Tapped("This question is no longer open.")
        if user_id != stored.user_id:
            return Tapped("Only the person this turn is for can answer.")
        asked = asked_of(stored)
        if asked is None:
            return Tapped("This question is no longer open.")
        return await self._answered(token, user_id, asked.choice(choice), "", stored)

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
        asked = pending.asked if pending is not None else asked_of(stored) if stored else None
        said = asked.said(answer, typed) if asked is not None else ""
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
            field = pending.field
            if mine and field is not None and field.typed and not pending.answer.done():
                return token, field, None
        return None


def _mark_asked() -> None:
    """The call asked its person something: its result carries the server's words."""
    if (clock := CALL_CLOCK.get()) is not None:
        clock.asked.set()


def asked_of(stored: StoredQuestion) -> Question | None:
    """A stored question as it was asked (None: not one of an input-required round)."""
    if stored.call is None:
        return None
    call = json.loads(stored.call)
    if call["params"].get("mode") == "url":
        return PageAsked.of(stored.connector_id, call)
    return Asked.of(stored.connector_id, call)
