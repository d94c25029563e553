"""A pending approval as its card reads in the chat (palui.approvals.cards), for the console."""

from __future__ import annotations

from palui.approvals.cards import card
from palui.approvals.edit_questions import descriptions, off_site_tools
from palui.domain import ApprovalRecord, Card
from palui.web.deps import WebDeps


def pending_card(deps: WebDeps, record: ApprovalRecord) -> Card:
    """The card as the chat shows it: same lines, the description and the off-site badge."""
    registry = deps.registry
    described = descriptions(registry) if registry is not None else {}
    off_site = off_site_tools(registry) if registry is not None else set()
    return card(
        record, described.get(record.tool, ""), now=deps.now(), off_site=record.tool in off_site
    )
