"""The policy (DESIGN §1.4) applied to one turn's offered tools: each tool's class, the decision
for a call right now (the turn's taint may have changed), why, and the decision id it is
recorded under."""

from __future__ import annotations

from palui.domain import Taint, ToolCallRequest, TurnKind
from palui.policy.classes import Classification
from palui.policy.matrix import Decision, decide_call, decision_id, why
from palui.tools.arguments import parse_arguments
from palui.tools.catalog import ToolCatalog
from palui.tools.digest import call_digest
from palui.tools.registry import ToolOffer


class TurnPolicy:
    def __init__(
        self, offer: ToolOffer, catalog: ToolCatalog, kind: TurnKind, just_approved: frozenset[str]
    ) -> None:
        self._offer = offer
        self._catalog = catalog
        self._kind = kind
        # Digests of calls approved moments ago: an idempotent write may repeat without a card.
        self._just_approved = just_approved

    def classification(self, name: str) -> Classification | None:
        tool = self._offer.tools.get(name)
        if tool is None:
            return None
        return self._catalog.entry(tool.toolset.id, tool.remote).classification

    def decision(self, name: str, taint: Taint | None) -> Decision:
        classification = self.classification(name)
        if classification is None:
            return Decision.REFUSED
        return decide_call(classification.tool_class, self._kind, taint is not None)

    def why(self, name: str, taint: Taint | None) -> str:
        classification = self.classification(name)
        tool_class = classification.tool_class if classification else None
        unsure = bool(classification and classification.unsure)
        return why(tool_class, self._kind, taint is not None, taint=taint, unsure=unsure)

    def decision_id(self, name: str, decision: Decision) -> str:
        classification = self.classification(name)
        assert classification is not None
        return decision_id(
            name, classification.tool_class, decision, self._catalog.kinds_digest,
            self._catalog.infer, classification.definition_hash,
        )  # fmt: skip

    def idempotent_retry(self, call: ToolCallRequest) -> bool:
        """An immediate identical retry of a just-approved write whose server marks it
        idempotent runs without a second card (DESIGN §1.4)."""
        classification = self.classification(call.name)
        tool = self._offer.tools.get(call.name)
        if not (classification and tool and classification.idempotent):
            return False
        if classification.tool_class != "write":
            return False
        try:
            arguments = parse_arguments(call.arguments)
        except ValueError:
            return False
        digest = call_digest(call.name, arguments, classification.definition_hash)
        return digest in self._just_approved
