"""A job's run: a `scheduled` turn in the job's chat, started once (the run row moves from
queued to started first; it records the turn, so tokens count per job).

A server's question during one of its calls goes to the job's owner in the job's chat, headed
with the job's name like the run's answer; the run waits for it as a chat turn does (the wait
does not count against its time), and only the owner can answer it."""

from __future__ import annotations

import uuid

from palui.agent.context import build_context
from palui.agent.turn import run_turn
from palui.connectors.elicitation import ASKING, Asking
from palui.domain import Fence, JobRecord, Message, Role, RunRecord, TurnKind
from palui.domain.turn_record import TurnStart
from palui.jobs.view import job_prompt
from palui.logs import bound, get_logger
from palui.observe import trace_id
from palui.turns import starting_taint as starting
from palui.turns import words
from palui.turns.drive import Drive, headed
from palui.turns.parts import TurnParts

log = get_logger("palui.turns")


def job_heading(job_id: int) -> str:
    return f"⏰ Job #{job_id}"


def job_asking(job: JobRecord, turn_id: str) -> Asking | None:
    """Who a run's questions go to: the job's owner (None: nobody known, they are declined)."""
    if job.owner_id is None:
        return None
    return Asking(job.chat_id, job.owner_id, turn_id, job_heading(job.id))


async def run_job_turn(
    parts: TurnParts, drive: Drive, run: RunRecord, job: JobRecord, fence: Fence | None = None
) -> None:
    turn_id, chat_id = uuid.uuid4().hex, job.chat_id
    store = parts.store
    if not await store.jobs.start_run(run.id, turn_id):
        return  # another worker or process has it
    with bound(chat_id=chat_id, turn_id=turn_id, job_id=job.id):
        session_id = await store.chats.current_session(chat_id)
        await store.turns.start(
            TurnStart(
                turn_id,
                chat_id,
                kind=TurnKind.SCHEDULED,
                session_id=session_id,
                fence=fence,
                model=job.model,
                trace_id=trace_id(),
            )
        )
        prompt = Message(Role.USER, job_prompt(job))
        skills = await parts.skills_prompt(prompt.content)
        messages = build_context([prompt], now=parts.now(), skills=skills)
        taint = starting.job_turn(job)
        offer = await parts.offers.for_messages([prompt], TurnKind.SCHEDULED, taint is not None)
        said = words.of_job(job, taint)
        tools = await parts.tools(offer, turn_id, chat_id, TurnKind.SCHEDULED, taint, said, fence)
        deps = parts.deps(turn_id, chat_id, tools, fence, job.model)
        log.info("turn_started", kind="scheduled", tools=len(offer.tools))
        loop = headed(run_turn(deps, messages), job_heading(job.id))
        asking = ASKING.set(job_asking(job, turn_id))
        try:
            await drive(chat_id, turn_id, loop, tools, [], None, fence)
        finally:
            ASKING.reset(asking)
