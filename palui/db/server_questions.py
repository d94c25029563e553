"""Servers' questions during tool calls (`server_questions`), each move a conditional UPDATE so
two taps, or two processes, never both take an answer.

A question is `open` until its person answers it (`answered`); the call waiting for it in this
process takes the answer (`taken`). After a restart nobody waits: a question of the 2026
protocol's input-required round (it has a `call`) is then continued once by whoever wins
`continue_call` (`continued`), only when its turn is no longer running.

A field answered by the person's next message is stored with the question (`typed_field`), so
whichever process receives that message recognises it as the answer (`typed_waiting`). /stop
of the turn cancels its questions not yet taken (`cancel_turn`): a later answer is refused.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import ColumnElement, select, update

from palui.db.engine import Database
from palui.db.models import ServerQuestion, Turn
from palui.domain import TurnStatus
from palui.domain.questions import StoredQuestion


class QuestionStatus(StrEnum):
    OPEN = "open"
    ANSWERED = "answered"
    TAKEN = "taken"  # the waiting call has the answer
    CONTINUED = "continued"  # answered after a restart: the call was continued from its state
    CLOSED = "closed"  # expired, or its call ended without it
    CANCELLED = "cancelled"  # its turn was stopped (/stop): a later answer is refused


class ServerQuestionRepo:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, question: StoredQuestion, now: datetime, expires_at: datetime) -> None:
        async with self._db.session() as s, s.begin():
            s.add(
                ServerQuestion(
                    token=question.token,
                    chat_id=question.chat_id,
                    user_id=question.user_id,
                    turn_id=question.turn_id,
                    connector_id=question.connector_id,
                    text=question.text,
                    call=question.call,
                    typed_field=question.typed_field,
                    status=QuestionStatus.OPEN,
                    created_at=now,
                    expires_at=expires_at,
                )
            )

    async def get(self, token: str) -> StoredQuestion | None:
        async with self._db.session() as s:
            row = await s.get(ServerQuestion, token)
        return _stored(row) if row is not None else None

    async def shown(self, token: str, message_id: int) -> None:
        """The question's card was sent as `message_id` (edited if its turn is stopped)."""
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(ServerQuestion)
                .where(ServerQuestion.token == token)
                .values(message_id=message_id)
            )

    async def typed_waiting(
        self, chat_id: int, user_id: int, now: datetime
    ) -> StoredQuestion | None:
        """The open question of this chat waiting for this person's next message, if any."""
        async with self._db.session() as s:
            row = (
                await s.execute(
                    select(ServerQuestion)
                    .where(
                        ServerQuestion.status == QuestionStatus.OPEN,
                        ServerQuestion.chat_id == chat_id,
                        ServerQuestion.user_id == user_id,
                        ServerQuestion.typed_field.is_not(None),
                        ServerQuestion.expires_at > now,
                    )
                    .order_by(ServerQuestion.created_at.desc())
                    .limit(1)
                )
            ).scalar_one_or_none()
        return _stored(row) if row is not None else None

    async def cancel_turn(self, turn_id: str) -> list[StoredQuestion]:
        """The turn was stopped: its questions not yet taken are cancelled, and returned (their
        cards are to say so). A question answered but not taken is cancelled too: nobody will
        take it, and it must not be continued later."""
        async with self._db.session() as s, s.begin():
            rows = (
                (
                    await s.execute(
                        update(ServerQuestion)
                        .where(
                            ServerQuestion.turn_id == turn_id,
                            ServerQuestion.status.in_(
                                [QuestionStatus.OPEN, QuestionStatus.ANSWERED]
                            ),
                        )
                        .values(status=QuestionStatus.CANCELLED)
                        .returning(ServerQuestion)
                    )
                )
                .scalars()
                .all()
            )
            return [_stored(row) for row in rows]

    async def answer(self, token: str, user_id: int, answer: str, now: datetime) -> bool:
        """The person's answer, once, while the question is open and not expired."""
        return await self._move(
            token,
            QuestionStatus.OPEN,
            QuestionStatus.ANSWERED,
            ServerQuestion.user_id == user_id,
            ServerQuestion.expires_at > now,
            answer=answer,
        )

    async def take(self, token: str) -> bool:
        """The waiting call takes the answer (so nobody continues the call again)."""
        return await self._move(token, QuestionStatus.ANSWERED, QuestionStatus.TAKEN)

    async def close(self, token: str) -> None:
        """Its call ended without an answer (expired, cancelled, the turn stopped)."""
        await self._move(token, QuestionStatus.OPEN, QuestionStatus.CLOSED)

    async def continue_call(self, token: str) -> StoredQuestion | None:
        """An answered question whose call nobody waits for any more (its turn ended: the
        process asking it stopped): the one caller that wins continues the call."""
        running = select(Turn.id).where(Turn.status == TurnStatus.RUNNING)
        moved = await self._move(
            token,
            QuestionStatus.ANSWERED,
            QuestionStatus.CONTINUED,
            ServerQuestion.call.is_not(None),
            ServerQuestion.turn_id.is_(None) | ServerQuestion.turn_id.not_in(running),
        )
        return await self.get(token) if moved else None

    async def _move(
        self,
        token: str,
        old: QuestionStatus,
        new: QuestionStatus,
        *conditions: ColumnElement[bool],
        **values: object,
    ) -> bool:
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(ServerQuestion)
                .where(ServerQuestion.token == token, ServerQuestion.status == old, *conditions)
                .values(status=new, **values)
                .returning(ServerQuestion.token)
            )
            return result.first() is not None


def _stored(row: ServerQuestion) -> StoredQuestion:
    return StoredQuestion(
        row.token,
        row.chat_id,
        row.user_id,
        row.turn_id,
        row.connector_id,
        row.text,
        row.call,
        row.answer,
        row.typed_field,
        row.message_id,
    )
