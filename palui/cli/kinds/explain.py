"""`palui kinds explain <tool>`: how one tool got its class, step by step, and its switch."""

from __future__ import annotations

import difflib
from fnmatch import fnmatchcase
from typing import TextIO

from palui.cli.kinds.steps import gather, step_lines
from palui.cli.kinds.survey import Survey, connector_ids, survey
from palui.config import Settings
from palui.policy.classes import ClassSource, ToolClass
from palui.policy.inference import Inference
from palui.policy.kinds_file import KindEntry
from palui.tools.builtins import CONNECTOR_ID as BUILTIN_ID
from palui.tools.catalog import CatalogEntry, Globs, StoredTool
from palui.tools.names import split_name


async def kinds_explain(settings: Settings, name: str, out: TextIO, err: TextIO) -> int:
    configured = connector_ids(settings)
    parts = split_name(name)
    only = {parts[0]} if parts is not None and parts[0] in configured else None
    found = await survey(settings, only)
    entry = next((e for e in found.entries if e.name == name), None)
    if entry is None:
        err.write(_unknown_tool(name, found, configured))
        return 1
    out.write(explain_text(entry, found, settings))
    return 0


def _unknown_tool(name: str, found: Survey, configured: set[str]) -> str:
    lines = [f"palui kinds explain: no tool is called {name!r}."]
    names = sorted(e.name for e in found.entries)
    bare: dict[str, list[str]] = {}
    for full in names:
        parts = split_name(full)
        if parts is not None:
            bare.setdefault(parts[1], []).append(full)
    wanted = split_name(name)
    tail = wanted[1] if wanted else name
    close = [*bare.get(name, []), *bare.get(tail, [])]
    close += difflib.get_close_matches(name, names, n=5, cutoff=0.6)
    for match in difflib.get_close_matches(tail, list(bare), n=5, cutoff=0.6):
        close += bare[match]
    close = list(dict.fromkeys(close))[:5]
    if close:
        lines.append("Did you mean: " + ", ".join(close) + "?")
    if wanted is None:
        lines.append("Name it in full as <connector>__<tool>, e.g. mcp-notes__add_note.")
    elif wanted[0] not in configured:
        known = ", ".join(sorted(configured)) or "none"
        lines.append(f"No connector {wanted[0]!r} is configured (configured: {known}).")
    for report in found.failed:
        lines.append(f"{report.id} did not connect ({report.problem}), so its tools are unknown.")
    lines.append("`palui kinds list` shows every tool.")
    return "\n".join(lines) + "\n"


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def explain_text(entry: CatalogEntry, found: Survey, settings: Settings) -> str:
    c = entry.classification
    tool = entry.remote
    evidence = gather(entry, found)
    stored = evidence.stored
    report = next((r for r in found.reports if r.id == entry.connector_id), None)
    paused = (
        " (paused in palui.toml: none of its tools is offered)" if report and report.paused else ""
    )
    if report is not None and report.note:
        paused = f" ({report.note})"
    why_sends = _sends_out_why(evidence.kinds_entry, evidence.inference)
    lines = [
        f"{entry.name}: {c.tool_class}{', sends out' if c.sends_out else ''} (source: {c.source})",
        f"  connector:       {entry.connector_id}{paused}",
        f"  description:     {' '.join((tool.description or '(none)').split())}",
        f"  reason:          {c.reason}",
    ]
    if c.conflict:
        lines.append(f"  conflict:        {c.conflict}")
    lines += [
        f"  sends out:       {_yes_no(c.sends_out)} ({why_sends})",
        f"  switch:          {'on' if entry.enabled else 'off'} "
        f"({_switch_why(entry, found, stored)})",
        f"  definition hash: sha256:{c.definition_hash}",
    ]
    if c.idempotent:
        lines.append("  idempotent:      yes (idempotentHint: an identical retry may skip a card)")
    lines += ["", "Where the class came from (the first step that gives one wins):"]
    lines += step_lines(entry, found, evidence)
    if entry.changed:
        was = stored.definition_hash if stored is not None else None
        lines += [
            "",
            "Its definition changed after it was classified"
            + (f" (was sha256:{was})" if was else "")
            + ": until someone looks at it again it counts as destructive (unsure).",
        ]
    lines += ["", f"Result: {c.explain()}"]
    if c.unsure or c.conflict:
        lines.append(
            f"To decide it yourself, name it in {found.kinds_path} "
            f"(`palui kinds draft` writes a file to start from)."
        )
    return "\n".join(lines) + "\n"


def _sends_out_why(kinds_entry: KindEntry | None, inference: Inference) -> str:
    assistant = kinds_entry is not None and kinds_entry.source is ClassSource.ASSISTANT
    if kinds_entry is not None and kinds_entry.sends_out is not None and not assistant:
        return "the kinds file says so"
    reasons = list(inference.destinations)
    if assistant and kinds_entry is not None and kinds_entry.sends_out:
        reasons.append("an assistant proposed it (a proposal may add sending out)")
    reasons += [s.text for s in inference.signals if str(s.effect) == "send"]
    if reasons:
        return "; ".join(reasons)
    return "no destination argument and no sending verb"


def _switch_why(entry: CatalogEntry, found: Survey, stored: StoredTool | None) -> str:
    _, _, tool = entry.name.partition("__")
    globs = found.globs.get(entry.connector_id, Globs())
    slug = entry.connector_id.removeprefix("mcp-")
    is_read = entry.classification.tool_class is ToolClass.READ
    changed_off = entry.changed and not is_read
    disabled = next((g for g in globs.disable if fnmatchcase(tool, g)), None)
    enabled = next((g for g in globs.enable if fnmatchcase(tool, g)), None)
    if disabled is not None:
        return f"palui.toml [mcp.{slug}] disable = {disabled!r} names it"
    if enabled is not None:
        why = f"palui.toml [mcp.{slug}] enable = {enabled!r} names it"
        return why + ("; but off: its definition changed" if changed_off else "")
    if stored is None:
        if is_read:
            first = "on because it is read"
        elif not entry.enabled:
            first = "off: a new tool starts off unless read"
        elif entry.connector_id == BUILTIN_ID:
            first = "on: Palui's own tools start on; the policy decides when they ask"
        else:
            first = "on: recall's save and forget start on; forget always asks first"
        return f"not set in the chat; {first}"
    why = "set in the chat"
    return why + ("; but off: its definition changed" if changed_off else "")
