"""`palui kinds propose`: the configured model proposes a class for each tool Palui could not
tell, and the proposals go into the kinds file as `source: assistant` for a person to confirm.

Only tools whose class is still a fallback are asked about: `unsure` (nothing told), or
destructive only by a default (an unreadable hint, or readOnlyHint false with destructiveHint
unset); a tool a person decided (the kinds file, or the card) is never asked about. Each tool
is asked in its own request with no tools offered, so one tool's description can't steer the
answer for another (`palui.cli.kinds.proposals`). A proposal counts only where it is stricter
(`palui.policy.classify`): nothing the model says makes a tool read without a person.

Exit codes: 0 fine, 1 a problem (the model could not be asked, an answer was not a valid
proposal, a connector did not connect), 2 bad configuration (no model, a broken kinds file).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from palui.cli.kinds.proposal_file import with_proposals
from palui.cli.kinds.proposals import Proposal, ProposalError, question, read_answer
from palui.cli.kinds.report import report_failures
from palui.cli.kinds.survey import Survey, survey
from palui.config import Settings
from palui.errors import ModelError
from palui.policy.annotations import read_marks
from palui.policy.classes import ClassSource, ToolClass
from palui.policy.classify import classify
from palui.ports import ChatModel
from palui.tools.catalog import CatalogEntry

# A file entry of these sources is no one's decision: a proposal may replace it.
_REPLACEABLE = (ClassSource.ASSISTANT, ClassSource.UNSURE)


def wants_proposal(entry: CatalogEntry, found: Survey) -> bool:
    """Whether the tool's class is still a fallback that no person decided."""
    kinds = found.kinds
    named = kinds.tools.get(entry.name) if kinds is not None else None
    if named is not None and named.source not in _REPLACEABLE:
        return False
    c = entry.classification
    if c.source is ClassSource.ASSISTANT and kinds is not None:  # what it is without it
        c = classify(entry.name, entry.remote, kinds.without(entry.name))
    if c.source is ClassSource.UNSURE:
        return True
    by_default = c.tool_class is ToolClass.DESTRUCTIVE and c.source is ClassSource.ANNOTATION
    return by_default and read_marks(entry.remote.annotations).defaulted


async def kinds_propose(settings: Settings, out: TextIO, err: TextIO) -> int:
    # palui.app brings the daemon with it: imported only when this command runs.
    from palui.app.parts import build_model

    model = build_model(settings)  # ConfigError without a model: exit 2, nothing asked
    path = settings.kinds_file
    text = path.read_text(encoding="utf-8") if path.exists() else None
    found = await survey(settings)
    report_failures(found, err)
    asked = [entry for entry in found.entries if wants_proposal(entry, found)]
    if not asked:
        out.write("No tool is unsure or destructive only by a default: nothing to propose.\n")
        return found.exit_code
    proposals, problems = [], 0
    for entry in asked:
        try:
            proposals.append(await _ask(model, entry))
        except ProposalError as exc:
            problems += 1
            err.write(f"palui kinds propose: {entry.name}: not a valid proposal ({exc}).\n")
        except ModelError as exc:
            err.write(f"palui kinds propose: the model could not be asked ({exc}).\n")
            err.write(f"Nothing was written to {path}.\n")
            return 1
    if proposals:
        _write(path, with_proposals(text, proposals, str(path)))
        out.write(_summary(proposals, path))
    return 1 if problems else found.exit_code


async def _ask(model: ChatModel, entry: CatalogEntry) -> Proposal:
    completion = await model.complete(question(entry.name, entry.remote))  # no tools offered
    if completion.tool_calls:
        raise ProposalError("the model asked to call a tool; none was offered")
    return read_answer(entry.name, completion.content)


def _summary(proposals: list[Proposal], path: Path) -> str:
    lines = [f"Wrote {len(proposals)} proposal(s) to {path} as source: assistant:"]
    for p in proposals:
        sends = ", sends out" if p.sends_out else ""
        lines.append(f"  {p.tool}: {p.tool_class}{sends} ({p.reason})")
    lines += [
        "Until you confirm one, it can only make a class stricter: these tools still count as",
        "destructive. Read each; to confirm one, change its source to you (or set the class",
        "on the /connectors card). `palui kinds list` shows them first; Palui reads the file",
        "at its next start.",
    ]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
