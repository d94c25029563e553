"""The five steps of a tool's classification, as `palui.policy.classify` takes them, told for
`palui kinds explain`: what each step saw, and which one decided.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from palui.cli.kinds.survey import Survey
from palui.policy.annotations import Marks, Verdict, read_marks, weigh
from palui.policy.classes import ClassSource, ToolClass
from palui.policy.inference import Inference, infer
from palui.policy.kinds_file import KindEntry
from palui.policy.own_verb import connector_of
from palui.tools.catalog import CatalogEntry, StoredTool

_CLASS_HINTS = (
    "readOnlyHint",
    "read_only_hint",
    "destructiveHint",
    "destructive_hint",
    "consequentialHint",
    "consequential_hint",
)
_OTHER_HINTS = ("idempotentHint", "idempotent_hint", "openWorldHint", "open_world_hint", "title")


@dataclass(frozen=True, slots=True)
class Evidence:
    """What each step sees of one tool."""

    kinds_entry: KindEntry | None  # 1. the kinds file's entry
    stored: StoredTool | None  # 2. what the chat stored (its class, if set)
    marks: Marks  # 3. the server's annotations
    inference: Inference  # 4. inference from its name, description and schema
    verdict: Verdict | None  # the marks weighed against inference
    infer_on: bool

    @property
    def proposal(self) -> bool:
        return self.kinds_entry is not None and self.kinds_entry.source is ClassSource.ASSISTANT

    @property
    def chat_class(self) -> ToolClass | None:
        return self.stored.tool_class if self.stored is not None else None

    @property
    def decided(self) -> int:
        """The step that gave the class (an assistant's unconfirmed proposal gives none by itself:
        it can only make the class found further down stricter)."""
        if self.kinds_entry is not None and not self.proposal:
            return 1
        if self.chat_class is not None:
            return 2
        if self.verdict is not None:
            return 3
        if self.infer_on and self.inference.tool_class is not None:
            return 4
        return 5

    def mark(self, step: int) -> str:
        decided = self.decided
        if step == decided:
            return "  <- decided here"
        if step == 4 and decided == 3:
            return "  (weighed against the marks in step 3)"
        return "  (not reached; shown for reference)" if step > decided else ""


def gather(entry: CatalogEntry, found: Survey) -> Evidence:
    kinds = found.kinds
    marks = read_marks(entry.remote.annotations)
    inference = infer(entry.remote, connector_of(entry.name, entry.remote.name))
    return Evidence(
        kinds_entry=kinds.tools.get(entry.name) if kinds is not None else None,
        stored=found.database.tools.get(entry.name),
        marks=marks,
        inference=inference,
        verdict=weigh(marks, inference),
        infer_on=kinds.infer if kinds is not None else True,
    )


def step_lines(entry: CatalogEntry, found: Survey, evidence: Evidence) -> list[str]:
    tool = entry.remote
    kinds = found.kinds
    kinds_entry, chat_class = evidence.kinds_entry, evidence.chat_class
    marks, inference, verdict = evidence.marks, evidence.inference, evidence.verdict
    mark = evidence.mark
    lines: list[str] = []
    # 1. the kinds file
    if kinds is None:
        step1 = f"no kinds file at {found.kinds_path}"
    elif kinds_entry is None:
        step1 = f"{kinds.path} does not name it"
    else:
        says = f"kind {kinds_entry.tool_class}"
        if kinds_entry.sends_out is not None:
            says += f", sends_out {str(kinds_entry.sends_out).lower()}"
        says += f", source {kinds_entry.source}"
        if kinds_entry.reason:
            says += f", reason {kinds_entry.reason!r}"
        step1 = f"{kinds.path} names it: {says}"
    lines.append(f"  1. Kinds file: {step1}.{mark(1)}")
    if evidence.proposal:
        lines.append(
            "     An assistant's proposal, not confirmed: it can only make the class found below "
            "stricter (change its source to you to confirm it)."
        )

    # 2. a class set in the chat (connector card)
    if not found.database.read:
        step2 = f"not known ({found.database.why})"
    elif chat_class is None:
        step2 = "no class set for it"
    else:
        step2 = f"set to {chat_class}"
    lines.append(f"  2. Class set in the chat: {step2}.{mark(2)}")

    # 3. the server's marks
    class_hints = _hints(tool.annotations, _CLASS_HINTS)
    other_hints = _hints(tool.annotations, _OTHER_HINTS)
    if marks.tool_class is None:
        said = "no annotations" if not tool.annotations else "annotations without a class hint"
        if other_hints:
            said += f" ({other_hints})"
        lines.append(f"  3. Server's marks: {said}: no mark.{mark(3)}")
    else:
        lines.append(
            f"  3. Server's marks: {class_hints or 'none'} -> {marks.tool_class} "
            f"({marks.reason}).{mark(3)}"
        )
        if other_hints:
            lines.append(f"     also: {other_hints}")
        if verdict is not None and verdict.marks_hold:
            lines.append("     Believed: inference sees nothing stricter.")
        elif verdict is not None:
            lines.append(
                f"     Not believed: inference sees {verdict.tool_class} ({verdict.reason}); "
                "the stricter class wins."
            )
            lines.append(f"     Conflict: {verdict.conflict}")

    # 4. inference
    off = (
        "" if evidence.infer_on else " (inference is off in the kinds file: it sets no class alone)"
    )
    seen = inference.tool_class or "nothing"
    lines.append(f"  4. Inference: {seen}{off}.{mark(4)}")
    for signal in inference.signals:
        lines.append(f"     - {signal.text} ({signal.effect})")
    if inference.tool_class is None:
        lines.append(f"     - {inference.no_verb}")
    for where in inference.destinations:
        lines.append(f"     - {where} (sends out)")

    # 5. fail closed
    lines.append(f"  5. Otherwise destructive (fail closed).{mark(5)}")
    return lines


def _hints(annotations: dict[str, Any] | None, keys: tuple[str, ...]) -> str:
    if not isinstance(annotations, dict):
        return ""
    found = [f"{key}: {json.dumps(annotations[key])}" for key in keys if key in annotations]
    return ", ".join(found)
