"""Turns: newest first, filterable by chat, kind and status; a turn's page tells its tool calls
stage by stage as `palui runs show` does (palui.turns.explain), with the cards it waited on, and
the tools it was offered and why (ranked, a named connector, found by search…)."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

from palui.approvals.cards import closed_card, outcome_line, render_arguments
from palui.db.runs import StepRecord
from palui.db.turn_listing import CallOverview
from palui.domain import ApprovalRecord, ApprovalStatus, CallStage, TurnKind, TurnStatus
from palui.turns.explain import cut, decision_basis, step_detail, timing
from palui.web.approvals import pending_card
from palui.web.deps import WebDeps
from palui.web.render import render
from palui.web.viewer import viewer_of


@dataclass
class CallView:
    """One tool call on a turn's page: its record, its stages, the card it waited on."""

    step: int
    call_id: str
    tool: str
    record: CallOverview | None = None
    stages: list[dict[str, str]] = field(default_factory=list)
    card: str | None = None
    card_status: str | None = None

    @property
    def arguments(self) -> str:
        return render_arguments(self.record.arguments)[0] if self.record else ""

    @property
    def result(self) -> str:
        return cut(self.record.result) if self.record else ""


def _stage(step: StepRecord) -> dict[str, str]:
    return {
        "stage": step.stage,
        "outcome": step.outcome,
        "reason": step.reason,
        "detail": step_detail(step),
        "timing": timing(step.duration_ms),
        "basis": " · ".join(decision_basis(step.detail)) if step.stage == CallStage.POLICY else "",
        "at": step.at.strftime("%H:%M:%S"),
    }


def _card_text(deps: WebDeps, record: ApprovalRecord) -> str:
    if record.status == ApprovalStatus.PENDING:
        return pending_card(deps, record).text
    return closed_card(record, outcome_line(record)).text


def calls_of(
    deps: WebDeps,
    steps: list[StepRecord],
    records: list[CallOverview],
    approvals: list[ApprovalRecord],
) -> list[CallView]:
    views: dict[str, CallView] = {}
    for record in records:
        views.setdefault(record.call_id, CallView(record.step, record.call_id, record.tool))
        views[record.call_id].record = record
    for step in steps:
        view = views.setdefault(step.call_id, CallView(step.step, step.call_id, step.tool))
        view.stages.append(_stage(step))
    for approval in approvals:
        view = views.setdefault(approval.call_id, CallView(0, approval.call_id, approval.tool))
        view.card, view.card_status = _card_text(deps, approval), approval.status
    return sorted(views.values(), key=lambda v: v.step)


def _choice(value: str | None, allowed: list[str]) -> str | None:
    return value if value in allowed else None


def routes(deps: WebDeps) -> list[web.RouteDef]:
    kinds = [str(k) for k in TurnKind]
    statuses = [str(s) for s in TurnStatus]

    async def listing(request: web.Request) -> web.Response:
        viewer = viewer_of(request)
        chats = sorted(viewer.chat_ids)
        chat = request.query.get("chat", "")
        chat_id = int(chat) if chat.lstrip("-").isdigit() and int(chat) in viewer.chat_ids else None
        kind = _choice(request.query.get("kind"), kinds)
        status = _choice(request.query.get("status"), statuses)
        turns = await deps.store.turn_listing.listing(
            viewer.chat_ids, chat_id=chat_id, kind=kind, status=status, limit=100
        )
        return render(
            request,
            "turns.html",
            nav="turns",
            turns=turns,
            chats=chats,
            kinds=kinds,
            statuses=statuses,
            chosen={"chat": chat_id, "kind": kind, "status": status},
        )

    async def one(request: web.Request) -> web.Response:
        viewer = viewer_of(request)
        turn = await deps.store.turn_listing.one(request.match_info["turn_id"], viewer.chat_ids)
        if turn is None:
            return render(request, "not_found.html", status=404)
        steps = await deps.store.runs.steps(turn.turn_id)
        records = await deps.store.turn_listing.calls(turn.turn_id)
        approvals = await deps.store.approvals.for_turn(turn.turn_id)
        calls = calls_of(deps, steps, records, approvals)
        offered = await deps.store.turn_listing.offered(turn.turn_id)
        enabled = max((o.enabled for o in offered), default=0)
        return render(
            request,
            "turn.html",
            nav="turns",
            turn=turn,
            calls=calls,
            offered=offered,
            enabled=enabled,
        )

    return [
        web.get("/turns", listing, name="turns"),
        web.get("/turns/{turn_id}", one, name="turn"),
    ]
