"""`palui kinds explain <tool>`: how one tool got its class, step by step, and its switch."""

from __future__ import annotations

import difflib
import json
from fnmatch import fnmatchcase
from typing import Any, TextIO

from palui.cli.kinds.survey import Survey, connector_ids, survey
from palui.config import Settings
from palui.policy.annotations import read_marks, weigh
from palui.policy.classes import ToolClass
from palui.policy.inference import Inference, infer
from palui.policy.kinds_file import KindEntry
from palui.tools.builtins import CONNECTOR_ID as BUILTIN_ID
from palui.tools.catalog import CatalogEntry, Globs, StoredTool
from palui.tools.names import split_name

_CLASS_HINTS = (
    "readOnlyHint",
    "read_only_hint",
    "destructiveHint",
    "destructive_hint",
    "consequentialHint",
    "consequential_hint",
)
_OTHER_HINTS = ("idempotentHint", "idempotent_hint", "openWorldHint", "open_world_hint", "title")


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


def _hints(annotations: dict[str, Any] | None, keys: tuple[str, ...]) -> str:
    if not isinstance(annotations, dict):
        return ""
    found = [f"{key}: {json.dumps(annotations[key])}" for key in keys if key in annotations]
    return ", ".join(found)


def explain_text(entry: CatalogEntry, found: Survey, settings: Settings) -> str:
    c = entry.classification
    tool = entry.remote
    kinds = found.kinds
    kinds_entry = kinds.tools.get(entry.name) if kinds is not None else None
    stored = found.database.tools.get(entry.name)
    chat_class = stored.tool_class if stored is not None else None
    marks = read_marks(tool.annotations)
    inference = infer(tool)
    verdict = weigh(marks, inference)
    infer_on = kinds.infer if kinds is not None else True
    report = next((r for r in found.reports if r.id == entry.connector_id), None)
    paused = (
        " (paused in palui.toml: none of its tools is offered)" if report and report.paused else ""
    )
    if report is not None and report.note:
        paused = f" ({report.note})"

    # Which step gave the class, as `palui.policy.classify` decides it.
    if kinds_entry is not None:
        decided = 1
    elif chat_class is not None:
        decided = 2
    elif verdict is not None:
        decided = 3
    elif infer_on and inference.tool_class is not None:
        decided = 4
    else:
        decided = 5

    def mark(step: int) -> str:
        if step == decided:
            return "  <- decided here"
        if step == 4 and decided == 3:
            return "  (weighed against the marks in step 3)"
        return "  (not reached; shown for reference)" if step > decided else ""

    lines = [
        f"{entry.name}: {c.tool_class}{', sends out' if c.sends_out else ''} (source: {c.source})",
        f"  connector:       {entry.connector_id}{paused}",
        f"  description:     {' '.join((tool.description or '(none)').split())}",
        f"  reason:          {c.reason}",
    ]
    if c.conflict:
        lines.append(f"  conflict:        {c.conflict}")
    lines += [
        f"  sends out:       {_yes_no(c.sends_out)} ({_sends_out_why(kinds_entry, inference)})",
        f"  switch:          {'on' if entry.enabled else 'off'} "
        f"({_switch_why(entry, found, stored)})",
        f"  definition hash: sha256:{c.definition_hash}",
    ]
    if c.idempotent:
        lines.append("  idempotent:      yes (idempotentHint: an identical retry may skip a card)")
    lines += ["", "Where the class came from (the first step that gives one wins):"]

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
    off = "" if infer_on else " (inference is off in the kinds file: it sets no class alone)"
    seen = inference.tool_class or "nothing"
    lines.append(f"  4. Inference: {seen}{off}.{mark(4)}")
    for signal in inference.signals:
        lines.append(f"     - {signal.text} ({signal.effect})")
    if not inference.signals:
        lines.append("     - no verb tells what it does")
    for where in inference.destinations:
        lines.append(f"     - {where} (sends out)")

    # 5. fail closed
    lines.append(f"  5. Otherwise destructive (fail closed).{mark(5)}")
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
    if kinds_entry is not None and kinds_entry.sends_out is not None:
        return "the kinds file says so"
    reasons = list(inference.destinations)
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
