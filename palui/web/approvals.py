"""Approvals: the pending ones as their cards read, with Approve and Deny, and the decided ones
as history. A press here goes through `Approvals.decide`, the rules of a tap: bound to the
digest of the call the page showed, single use, expiry; the chat's card is edited to say it was
decided on the web and by whom, and the chat's worker resumes the turn."""

from __future__ import annotations

from aiohttp import web

from palui.approvals.cards import card, closed_card, outcome_line
from palui.approvals.decisions import NOT_REQUESTER, TapOutcome
from palui.approvals.edit_questions import descriptions, off_site_tools
from palui.domain import ApprovalRecord, Card
from palui.web.deps import WebDeps
from palui.web.render import render, see_other
from palui.web.viewer import viewer_of

# What the page says after a press, by the decision's outcome (a fixed set: the address can't
# make the page say anything).
NOTICES: dict[str, str] = {
    TapOutcome.APPROVED: "Approved. The turn goes on in the chat.",
    TapOutcome.DENIED: "Denied. Nothing was run; the model is told.",
    TapOutcome.ALREADY_DECIDED: "Already decided: nothing changed.",
    TapOutcome.EXPIRED: "This approval had expired. Nothing was run.",
    TapOutcome.CHANGED: "The call changed after the page was loaded. Nothing was decided.",
    TapOutcome.MISSING: "There is no such approval.",
    TapOutcome.NOT_REQUESTER: NOT_REQUESTER,
}


def pending_card(deps: WebDeps, record: ApprovalRecord) -> Card:
    """A pending approval's card as the chat shows it: same lines, the description and the
    off-site badge."""
    registry = deps.registry
    described = descriptions(registry) if registry is not None else {}
    off_site = off_site_tools(registry) if registry is not None else set()
    return card(
        record, described.get(record.tool, ""), now=deps.now(), off_site=record.tool in off_site
    )


def routes(deps: WebDeps) -> list[web.RouteDef]:
    async def listing(request: web.Request) -> web.Response:
        viewer = viewer_of(request)
        pending = await deps.store.approvals.listed(viewer.chat_ids, pending=True)
        decided = await deps.store.approvals.listed(viewer.chat_ids, pending=False, limit=50)
        return render(
            request,
            "approvals.html",
            nav="approvals",
            pending=[(a, pending_card(deps, a).text) for a in pending],
            decided=[(a, closed_card(a, outcome_line(a)).text) for a in decided],
            notice=NOTICES.get(request.query.get("done", "")),
        )

    async def decide(request: web.Request) -> web.Response:
        viewer = viewer_of(request)
        form = await request.post()
        choice, digest = form.get("decision"), form.get("digest")
        if choice not in ("approve", "deny") or not isinstance(digest, str):
            return see_other(f"/ui/approvals?done={TapOutcome.MISSING}")
        result = await deps.approvals.decide(
            request.match_info["approval_id"],
            choice == "approve",
            viewer.display,
            chat_ids=viewer.chat_ids,
            digest=digest,
            user_id=viewer.user_id,
        )
        if result.resumable_turn is not None:
            record = await deps.store.approvals.by_id(request.match_info["approval_id"])
            if record is not None:
                deps.wake(record.chat_id)
        return see_other(f"/ui/approvals?done={result.outcome}")

    return [
        web.get("/approvals", listing, name="approvals"),
        web.post("/approvals/{approval_id}", decide, name="approval_decide"),
    ]
