"""How a turn's drive ends, each in one transaction: answered (reply in history and outbox),
paused (state and approvals stored, then the cards), stopped, or failed (the person is told why;
nothing enters the history)."""

from __future__ import annotations

import dataclasses
from typing import Any

from palui.agent.snapshot import dump_snapshot
from palui.agent.subturn import task_of
from palui.agent.turn import NeedsApproval, TurnSnapshot
from palui.db.turns import Ended
from palui.domain import Fence, NewApproval, TurnContext, TurnKind, TurnStatus
from palui.domain.turn_record import TurnEnd
from palui.errors import LeaseLost, ModelError, ModelUnavailable
from palui.logs import get_logger
from palui.observe import event
from palui.ports import ReplyStream
from palui.tools.catalog import off_site
from palui.tools.runner import CallRunner
from palui.turns.outage import TOLD
from palui.turns.parts import TurnParts

log = get_logger("palui.turns")
CHAT = TurnKind.CHAT

SUB_TASK_SHOWN = 120  # characters of a sub-task a card names

PAUSE_FAILED = (
    "Something went wrong while I was asking for your approval, so I stopped this request. "
    "Nothing that needed approval was run. Try again?"
)
CARDS_NOT_POSTED = (
    "I couldn't show an approval card just now. Nothing that needed approval was run; "
    "/approvals lists what waits."
)


async def end(
    parts: TurnParts,
    turn_id: str,
    status: TurnStatus,
    update_ids: list[int],
    tools: CallRunner,
    **fields: Any,
) -> Ended | None:
    """Commit the turn's end; the reply's outbox row. `fence=` (the chat lease the turn runs
    under) makes it conditional on that lease still holding (`LeaseLost` if not)."""
    riders = tools.context.ports.riders
    riders.offered(turn_id, tools.offer_events())
    ended = TurnEnd(turn_id, status, update_ids, taint=tools.taint, **fields)
    return await parts.store.turns.finish(ended, riders)


async def pause(
    parts: TurnParts,
    chat_id: int,
    turn_id: str,
    paused: NeedsApproval,
    tools: CallRunner,
    update_ids: list[int],
    fence: Fence | None = None,
) -> None:
    """Store the paused turn with its approvals, then post the cards. A failure before the
    pause is stored ends the turn as failed (the person is told; the worker goes on); one while
    posting leaves it paused with its cards stored, and the person is told to look at them.
    Under `fence`, only while the chat's lease holds: else `LeaseLost`, nothing stored or
    posted."""
    try:
        approvals = await parts.approvals.open(turn_id, chat_id, paused.held, tools)
        approvals = [sub_task_named(a, paused.snapshot) for a in approvals]
        await tools.record_held(paused.held, paused.snapshot.steps)
        context = TurnContext(tools.context.kind, tools.taint, tuple(tools.offered))
        riders = tools.context.ports.riders
        riders.offered(turn_id, tools.offer_events())
        await parts.store.approvals.pause_turn(
            turn_id,
            chat_id,
            dump_snapshot(paused.snapshot, context),
            approvals,
            update_ids=update_ids,
            taint=tools.taint,
            fence=fence,
            riders=riders,
        )
    except LeaseLost:
        raise
    except Exception as exc:
        log.exception("turn_pause_failed")
        await end(
            parts,
            turn_id,
            TurnStatus.FAILED,
            update_ids,
            tools,
            reply=PAUSE_FAILED,
            remember=False,
            error=f"pausing failed: {exc!r}",
            fence=fence,
        )
        return
    log.info("turn_paused", held=[call.name for call in paused.held])
    parts.metrics.cards_opened(len(approvals))
    event("palui.card_wait", tools=[call.name for call in paused.held])
    descriptions = {name: t.remote.description for name, t in tools.offered.items()}
    off = {name for name, t in tools.offered.items() if off_site(t.toolset.id, t.remote)}
    forms = {c.name for c in paused.held if tools.policy.form(c.name) or tools.awaits_form(c.id)}
    try:
        await parts.approvals.post_cards(
            turn_id, descriptions, off, forms=forms, after_update=max(update_ids, default=0)
        )
    except Exception:
        log.exception("cards_not_posted")
        await parts.store.outbox.add(chat_id, CARDS_NOT_POSTED)


def sub_task_named(approval: NewApproval, snapshot: TurnSnapshot) -> NewApproval:
    """A card for a call of a sub-turn (`palui.agent.subturn`) says which sub-task asks."""
    sub = snapshot.sub
    if sub is None or not approval.call_id.startswith(f"{sub.call.id}/"):
        return approval
    task = " ".join((task_of(sub.call) or "").split())
    if len(task) > SUB_TASK_SHOWN:
        task = task[: SUB_TASK_SHOWN - 1] + "…"
    return dataclasses.replace(approval, why=f"{approval.why} (asked by the sub-task “{task}”)")


async def finish_stream(stream: ReplyStream) -> int | None:
    """Stop the streamed preview; the preview the answer is to replace, if there is one.

    The final edit is the outbox's (`palui.delivery.outbox`): it records the edit with the reply's
    other parts, so a crash between the edit and its record repeats the edit (harmless) instead
    of sending the answer again as a new message."""
    await stream.close()
    return stream.preview_message_id


async def fail(
    parts: TurnParts,
    turn_id: str,
    update_ids: list[int],
    tools: CallRunner,
    exc: Exception,
    fence: Fence | None = None,
    chat_id: int | None = None,
) -> tuple[str, Ended | None]:
    """A turn that could not answer: the person is told why, and truthfully what ran — "Nothing
    was run" only when no call that changes the world (a write, a destructive call, anything
    that sends out) went out in this drive; it leaves no history. Returns the outcome ("waits":
    kept for when the model is back, else "failed") and the reply its end stored."""
    ran = tools.changed_the_world()
    if isinstance(exc, ModelError):
        parts.metrics.model_called(parts.model.name, "failed")
    outage = parts.outage
    unreachable = isinstance(exc, ModelUnavailable) and outage is not None
    if unreachable and chat_id is not None and not ran and _can_wait(tools, update_ids):
        assert outage is not None
        # What the turn was for waits (`palui.turns.outage`): the messages stay in the inbox,
        # a job's run is queued again, a webhook's delivery stays unhandled.
        log.warning("model_unavailable_kept", error=str(exc), messages=len(update_ids))
        return "waits", await end(
            parts,
            turn_id,
            TurnStatus.FAILED,
            [],
            tools,
            remember=False,
            fence=fence,
            reply=TOLD if outage.went_down(chat_id) else None,
            error=str(exc),
            waits=True,
            kept=update_ids,
        )
    if isinstance(exc, ModelUnavailable):
        log.warning("model_unavailable", error=str(exc))
        text = unavailable_text(exc, ran)
    elif isinstance(exc, ModelError):
        log.warning("model_error", error=str(exc))
        text = f"The model call failed ({exc}). {what_ran(ran)}"
    else:
        log.exception("turn_crashed")
        if ran:
            text = (
                f"Something went wrong on my side after I ran {_names(ran)}; "
                f"{'it' if len(ran) == 1 else 'they'} did run. Check before you try again."
            )
        else:
            text = "Something went wrong on my side, sorry. Nothing was run. Try again?"
    return "failed", await end(
        parts,
        turn_id,
        TurnStatus.FAILED,
        update_ids,
        tools,
        reply=text,
        remember=False,
        error=str(exc) or repr(exc),
        fence=fence,
    )


def _can_wait(tools: CallRunner, update_ids: list[int]) -> bool:
    """A turn's first drive that can run again from its start: a chat turn's (on its messages),
    a job's run or a webhook's summary. A resumed turn cannot: its cards were decided."""
    if tools.context.resumed:
        return False
    return bool(update_ids) if tools.context.kind is CHAT else True


def what_ran(ran: list[str]) -> str:
    if not ran:
        return "Nothing was run."
    return f"I had already run {_names(ran)}; {'it' if len(ran) == 1 else 'they'} did run."


def _names(ran: list[str]) -> str:
    return ", ".join(ran[:-1]) + f" and {ran[-1]}" if len(ran) > 1 else ran[0]


def unavailable_text(exc: ModelUnavailable, ran: list[str] | None = None) -> str:
    first_model, first_reason = exc.attempts[0] if exc.attempts else ("the model", "unknown")
    tried = " I tried the fallback too." if len(exc.attempts) > 1 else ""
    reason = f"{first_model}: {first_reason}"
    return f"The model could not be reached ({reason}).{tried} {what_ran(ran or [])}"
