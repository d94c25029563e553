"""Rows of usage at chosen times: model calls, turns and job runs, written straight into the
tables (a test of what is counted must choose when things happened)."""

from __future__ import annotations

import itertools
from datetime import datetime

from palui.db import Store
from palui.db.models import Chat, ChatSession, JobRun, ModelCall, Turn

_ids = itertools.count(1)


async def add_chat(store: Store, chat_id: int) -> int:
    """The chat and a session of it; the session's id."""
    async with store.db.session() as s, s.begin():
        if await s.get(Chat, chat_id) is None:
            s.add(Chat(id=chat_id))
            await s.flush()
        session = ChatSession(chat_id=chat_id)
        s.add(session)
        await s.flush()
        return session.id


async def add_turn(
    store: Store, chat_id: int, at: datetime, tokens: int = 0, *, job_id: int | None = None
) -> str:
    """A finished turn that started `at` and used `tokens` in one model call at that time (a
    run of `job_id` when given)."""
    session_id = await add_chat(store, chat_id)
    turn_id = f"t{next(_ids):06d}{int(at.timestamp())}"
    async with store.db.session() as s, s.begin():
        s.add(
            Turn(
                id=turn_id, chat_id=chat_id, session_id=session_id, kind="chat", status="done",
                started_at=at, ended_at=at,
            )
        )  # fmt: skip
        if tokens:
            s.add(
                ModelCall(
                    turn_id=turn_id, chat_id=chat_id, model="m", prompt_tokens=tokens,
                    completion_tokens=0, total_tokens=tokens, created_at=at,
                )
            )  # fmt: skip
        if job_id is not None:
            s.add(
                JobRun(
                    job_id=job_id, chat_id=chat_id, scheduled_for=at, status="started",
                    turn_id=turn_id, claimed_at=at, started_at=at,
                )
            )  # fmt: skip
    return turn_id
