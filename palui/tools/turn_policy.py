"""The policy (DESIGN §1.4) applied to one turn's offered tools: each tool's class, the decision
for a call right now (the turn's taint may have changed; in a tainted turn, where a call that
sends out goes counts), why, and the decision id it is recorded under."""

from __future__ import annotations

from typing import Any

from palui.domain import Taint, ToolCallRequest, TurnKind
from palui.policy.classes import Classification
from palui.policy.destinations import CallDestinations, call_destinations
from palui.policy.matrix import Decision, Width, cell, decide_call, decision_id, why
from palui.policy.named import NamedDestinations, Unnamed
from palui.policy.taint_rule import describe_taint
from palui.tools.arguments import parse_arguments
from palui.tools.catalog import ToolCatalog
from palui.tools.digest import call_digest
from palui.tools.registry import ToolOffer


class TurnPolicy:
    def __init__(
        self,
        offer: ToolOffer,
        catalog: ToolCatalog,
        kind: TurnKind,
        just_approved: frozenset[str],
        named: NamedDestinations | None = None,
    ) -> None:
        self._offer = offer
        self._catalog = catalog
        self._kind = kind
        # The destinations the person gave: a tainted turn sends elsewhere only after a card.
        self._named = named or NamedDestinations()
        # Digests of calls approved moments ago: an idempotent write may repeat without a card.
        self._just_approved = just_approved

    def know(
        self, named: NamedDestinations | None = None, just_approved: frozenset[str] | None = None
    ) -> None:
        """Inputs read lazily (`palui.tools.lazy`), once a call needs them."""
        if named is not None:
            self._named = named
        if just_approved is not None:
            self._just_approved = just_approved

    def width(self, name: str) -> Width:
        """The width of the connector the tool comes from (`palui.policy.matrix`)."""
        tool = self._offer.tools.get(name)
        return self._catalog.width(tool.toolset.id) if tool is not None else Width.READS

    def classification(self, name: str) -> Classification | None:
        tool = self._offer.tools.get(name)
        if tool is None:
            return None
        return self._catalog.entry(tool.toolset.id, tool.remote).classification

    def unnamed(self, call: ToolCallRequest) -> Unnamed | None:
        """The destinations of a call that sends out which the person did not give (None for
        a tool that does not send out). Arguments that can't be read go nowhere known."""
        classification = self.classification(call.name)
        tool = self._offer.tools.get(call.name)
        if classification is None or tool is None or not classification.sends_out:
            return None
        try:
            arguments = parse_arguments(call.arguments)
        except ValueError:
            return self._named.unnamed(CallDestinations(unknown=True))
        found = call_destinations(tool.remote.input_schema or {}, arguments)
        return self._named.unnamed(found)

    def form(self, name: str) -> bool:
        """Every call of this tool is reviewed in a form (✏️ Edit's questions) first."""
        tool = self._offer.tools.get(name)
        return tool is not None and self._catalog.form(tool.toolset.id, tool.remote)

    def decision(self, call: ToolCallRequest, taint: Taint | None) -> Decision:
        classification = self.classification(call.name)
        if classification is None:
            return Decision.REFUSED
        unnamed = self.unnamed(call) if taint is not None else None
        tainted = taint is not None
        width = self.width(call.name)
        decision = decide_call(
            classification.tool_class, self._kind, tainted, unnamed=unnamed, width=width
        )
        if decision is Decision.RUN and self.form(call.name):
            return Decision.ASK  # a form is a card first: its rules all hold
        return decision

    def why(self, call: ToolCallRequest, taint: Taint | None) -> str:
        classification = self.classification(call.name)
        tool_class = classification.tool_class if classification else None
        unsure = bool(classification and classification.unsure)
        unnamed = self.unnamed(call) if taint is not None else None
        tainted, width = taint is not None, self.width(call.name)
        said = why(
            tool_class,
            self._kind,
            tainted,
            taint=taint,
            unsure=unsure,
            unnamed=unnamed,
            width=width,
        )
        if self.form(call.name):
            return f"{said}; the operator reviews every call of this tool in a form first"
        return said

    def decision_id(self, name: str, decision: Decision) -> str:
        classification = self.classification(name)
        assert classification is not None
        return decision_id(
            name,
            classification.tool_class,
            decision,
            self._catalog.kinds_digest,
            self._catalog.infer,
            classification.definition_hash,
            self.width(name),
        )

    def basis(self, call: ToolCallRequest, taint: Taint | None) -> dict[str, Any]:
        """What the decision rested on, as recorded with it (`palui runs explain`): the class
        and where it came from at that moment, the connector's width, the taint and its
        source, the turn's kind, the matrix cell, the kinds file's digest and inference."""
        classification = self.classification(call.name)
        tool = self._offer.tools.get(call.name)
        tool_class = classification.tool_class if classification else None
        width = self.width(call.name)
        width_from = self._catalog.width_source(tool.toolset.id) if tool else None
        return {
            "class": str(tool_class) if tool_class else None,
            "class_source": str(classification.source) if classification else None,
            "class_reason": classification.reason if classification else None,
            "width": str(width),
            "width_source": str(width_from) if width_from else None,
            "turn_kind": str(self._kind),
            "taint": describe_taint(taint) if taint is not None else None,
            "cell": cell(tool_class, self._kind, taint is not None, width),
            "kinds_digest": self._catalog.kinds_digest,
            "infer": self._catalog.infer,
        }

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
