"""The person's own words a turn takes its given destinations from (DESIGN §1.4): the one place
that reads them. A tainted turn sends out without a card only to what these name (or the
operator's `[limits] allowed_destinations`, `palui.policy.named`).

A chat turn: the person's messages of its session (untainted: never replies, tool output, or
other people's words). A job's run: the job's prompt, only while the job itself is not tainted
(its starting taint says so). A resumed turn: the same, read again for its kind.
"""

from __future__ import annotations

from palui.db import Store
from palui.domain import JobRecord, Taint, TurnKind
from palui.turns import starting_taint as starting


async def of_session(store: Store, session_id: int) -> tuple[str, ...]:
    return await store.chats.persons_words(session_id)


def of_job(job: JobRecord, job_taint: Taint | None) -> tuple[str, ...]:
    """A job's prompt counts as the person's words only if the job is not tainted."""
    return () if job_taint is not None else (job.prompt,)


async def of_paused_turn(store: Store, turn_id: str, kind: TurnKind) -> tuple[str, ...]:
    if kind is TurnKind.SCHEDULED:
        job_id = await store.jobs.job_of_turn(turn_id)
        job = await store.jobs.get(job_id) if job_id is not None else None
        return of_job(job, starting.job_turn(job)) if job is not None else ()
    if kind is not TurnKind.CHAT:
        return ()
    session_id = await store.chats.session_of(turn_id)
    return await of_session(store, session_id) if session_id is not None else ()
