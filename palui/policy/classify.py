"""One tool's class: the first of kinds file, connector card, marks, inference, fail closed.

With `infer: false` inference no longer sets a class on its own, but the server's marks still
count, and they still stand only while the tool shows no sign of change: that check can only make
a class stricter, so keeping it is the fail-closed choice. A tool that is neither named in the
file, nor set in its card, nor marked, is destructive (source `unsure`).

An entry with `source: assistant` is a model's proposal that no person has confirmed yet
(`palui kinds propose`). It is believed only where it is stricter: the class is the stricter of
the proposal and what the tool would be without it (a class set in the card, marks, inference,
fail closed), and it can add *sends out* but never take it away. So a proposal can never make a
tool `read`, nor a write out of the destructive fallback: the model read the tool's own
description, which may be written to talk it into a laxer class. A person confirms a proposal
by changing its source to `you` (then the file decides, as for any entry) or by setting the
class on the connector card (a person's class, which an unconfirmed proposal does not override).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from palui.domain import RemoteTool
from palui.policy.annotations import read_marks, weigh
from palui.policy.classes import Classification, ClassSource, ToolClass, stricter
from palui.policy.inference import infer
from palui.policy.kinds_file import KindEntry, KindsFile
from palui.policy.own_verb import connector_of


def definition_hash(tool: RemoteTool) -> str:
    """sha256 over the tool's definition: name, title, description, input schema, annotations."""
    definition = {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "annotations": tool.annotations,
    }
    text = json.dumps(
        definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr
    )
    return hashlib.sha256(text.encode()).hexdigest()


def classify(
    full_name: str,
    tool: RemoteTool,
    kinds: KindsFile | None,
    *,
    override: Classification | None = None,
) -> Classification:
    """Classify `tool`, shown to the model as `full_name`.

    `override` is a class set in the connector card. The kinds file wins over it for the tools
    the file names, as palui.toml's switches win over the chat's; but an assistant's proposal
    does not, as the card is where a person may confirm (or correct) one. The card sets the
    class only: whether the tool sends out stays as found (its own mark, or inference), so the
    send cap, the card's "sends out" and the destination guard treat it as before.
    """
    entry = kinds.tools.get(full_name) if kinds is not None else None
    if kinds is not None and entry is not None and entry.source is ClassSource.ASSISTANT:
        found = classify(full_name, tool, kinds.without(full_name), override=override)
        return found if override is not None else _proposed(found, entry)
    digest = definition_hash(tool)
    inference = infer(tool, connector_of(full_name, tool.name))
    marks = read_marks(tool.annotations)
    if kinds is not None and entry is not None:
        sends_out = inference.sends_out if entry.sends_out is None else entry.sends_out
        return Classification(
            tool_class=entry.tool_class,
            sends_out=sends_out,
            source=entry.source,
            reason=entry.reason or f"named in {kinds.path}",
            definition_hash=digest,
            idempotent=marks.idempotent,
        )
    if override is not None:
        sends_out = override.sends_out or inference.sends_out
        return replace(
            override, sends_out=sends_out, definition_hash=digest, idempotent=marks.idempotent
        )
    verdict = weigh(marks, inference)
    if verdict is not None:
        source = ClassSource.ANNOTATION if verdict.marks_hold else ClassSource.INFERRED
        if marks.unreadable:
            source = ClassSource.UNSURE  # a mark nobody can read says nothing: fail closed
        return Classification(
            tool_class=verdict.tool_class,
            sends_out=inference.sends_out,
            source=source,
            reason=verdict.reason,
            conflict=verdict.conflict,
            definition_hash=digest,
            idempotent=marks.idempotent,
        )
    infer_on = kinds.infer if kinds is not None else True
    if infer_on and inference.tool_class is not None:
        return Classification(
            tool_class=inference.tool_class,
            sends_out=inference.sends_out,
            source=ClassSource.INFERRED,
            reason=inference.reason,
            definition_hash=digest,
            idempotent=marks.idempotent,
        )
    reason = inference.reason if infer_on else "not in the kinds file, no marks, inference off"
    return Classification(
        tool_class=ToolClass.DESTRUCTIVE,
        sends_out=inference.sends_out,
        source=ClassSource.UNSURE,
        reason=reason,
        definition_hash=digest,
        idempotent=marks.idempotent,
    )


def _proposed(found: Classification, proposal: KindEntry) -> Classification:
    """An unconfirmed proposal over what the tool is without it: stricter only (module doc)."""
    tool_class = stricter(found.tool_class, proposal.tool_class)
    sends_out = found.sends_out or proposal.sends_out is True
    if (tool_class, sends_out) == (found.tool_class, found.sends_out):
        return found  # it changes nothing: the class keeps its own source and reason
    said = f"{proposal.tool_class}{', sends out' if proposal.sends_out else ''}"
    reason = f"an assistant proposed {said} (not confirmed): {proposal.reason or 'no reason'}"
    return replace(
        found,
        tool_class=tool_class,
        sends_out=sends_out,
        source=ClassSource.ASSISTANT,
        reason=reason,
    )


def recheck(stored: Classification, tool: RemoteTool) -> Classification:
    """A stored classification against the tool's current definition.

    A class that came from marks or inference does not survive a change of definition: the
    tool is destructive (unsure) until someone looks at it again, and so does an assistant's
    unconfirmed proposal, which was about the old definition. A person's class stays; compare
    `definition_hash` to report the change.
    """
    digest = definition_hash(tool)
    if digest == stored.definition_hash or stored.source is ClassSource.YOU:
        return stored
    return Classification(
        tool_class=ToolClass.DESTRUCTIVE,
        sends_out=stored.sends_out or infer(tool).sends_out,
        source=ClassSource.UNSURE,
        reason="its definition changed since it was classified; look at it again",
        definition_hash=digest,
    )
