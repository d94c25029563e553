"""Resuming a paused turn once its cards are all decided: the turn is claimed (once, in one
process), rebuilt as it ran (kind, taint, the tools it was offered, still allowed), and driven on
with each held call's decision; the loop runs the approved calls through the turn's runner."""

from __future__ import annotations

from palui.agent.snapshot import load_snapshot
from palui.agent.turn import resume_turn
from palui.connectors.elicitation import ASKING, Asking
from palui.domain import Fence
from palui.logs import bound, get_logger
from palui.turns import words
from palui.turns.drive import Drive, headed
from palui.turns.job_turn import job_asking, job_heading
from palui.turns.parts import TurnParts
from palui.turns.stop import StopRequests

log = get_logger("palui.turns")


async def resume(
    parts: TurnParts,
    drive: Drive,
    stops: StopRequests,
    chat_id: int,
    turn_id: str,
    fence: Fence | None = None,
) -> None:
    await stops.forget(turn_id)  # a /stop its earlier drive ended before taking
    state = await parts.store.approvals.claim_resume(turn_id)
    if state is None:
        return  # another worker or process has it
    with bound(chat_id=chat_id, turn_id=turn_id):
        snapshot, context = load_snapshot(state)
        tainted = context.taint is not None
        offer = await parts.offers.named(context.offer, context.kind, tainted)
        said = await words.of_paused_turn(parts.store, turn_id, context.kind)
        tools = await parts.tools(
            offer, turn_id, chat_id, context.kind, context.taint, said, fence, resumed=True
        )
        log.info("turn_resumed")
        held = snapshot.waiting_ids()  # a waiting sub-turn's calls too
        decisions = await parts.approvals.decisions(turn_id, held, offer)
        # A server's question during a resumed call goes to the person whose message started
        # the turn, or to a job run's owner; the turn asks its own model.
        requester, model = await parts.store.turns.requester_and_model(turn_id)
        deps = parts.deps(turn_id, chat_id, tools, fence, model)
        loop = resume_turn(deps, snapshot, decisions)
        asked = Asking(chat_id, requester, turn_id) if requester is not None else None
        job_id = await parts.store.jobs.job_of_turn(turn_id)
        if job_id is not None:
            loop = headed(loop, job_heading(job_id))
            job = await parts.store.jobs.get(job_id)
            asked = job_asking(job, turn_id) if job is not None else None
        asking = ASKING.set(asked)
        try:
            await drive(chat_id, turn_id, loop, tools, [], None, fence)
        finally:
            ASKING.reset(asking)
