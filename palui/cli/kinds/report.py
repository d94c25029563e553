"""`palui kinds list`: every tool with its class, source and switch, as text or JSON lines."""

from __future__ import annotations

import json
from typing import Any, TextIO

from palui.cli.kinds.survey import Survey, survey
from palui.config import Settings
from palui.domain import ConnectorState
from palui.policy.classes import ClassSource
from palui.policy.kinds_file import KindEntry
from palui.tools.catalog import CatalogEntry


def no_mcp_servers(settings: Settings) -> str:
    where = settings.config or "config/palui.toml"
    return (
        "palui kinds: no MCP servers are configured; these are Palui's own tools only.\n"
        f"Add an MCP server to {where} (or point PALUI_CONFIG at a palui.toml), e.g.\n"
        "\n"
        "  [mcp.notes]                  # connector mcp-notes; tools appear as mcp-notes__<tool>\n"
        '  command = "python"           # stdio; or url = "https://…/mcp"\n'
        '  args = ["-m", "notes_server"]\n'
    )


def ordered(entries: list[CatalogEntry]) -> list[CatalogEntry]:
    """Unsure tools first, then by connector and name."""
    return sorted(entries, key=lambda e: (not e.classification.unsure, e.connector_id, e.name))


def proposal(found: Survey, entry: CatalogEntry) -> KindEntry | None:
    """An assistant's proposal for the tool in the kinds file, not yet confirmed by a person
    (a class a person set on the connector card decides instead: the proposal waits no more)."""
    named = found.kinds.tools.get(entry.name) if found.kinds is not None else None
    if named is None or named.source is not ClassSource.ASSISTANT:
        return None
    return None if entry.classification.source is ClassSource.YOU else named


def report_failures(survey_: Survey, err: TextIO) -> None:
    for report in survey_.failed:
        err.write(
            f"palui kinds: {report.id} did not connect ({report.problem}); its tools are missing.\n"
        )
    if survey_.database.failed:
        err.write(f"palui kinds: {survey_.database.note}\n")


def entry_json(entry: CatalogEntry, proposed: KindEntry | None = None) -> dict[str, Any]:
    c = entry.classification
    said = None
    if proposed is not None:
        said = {
            "class": str(proposed.tool_class),
            "sends_out": proposed.sends_out,
            "reason": proposed.reason,
        }
    return {
        "tool": entry.name,
        "connector": entry.connector_id,
        "class": str(c.tool_class),
        "sends_out": c.sends_out,
        "source": str(c.source),
        "reason": c.reason,
        "enabled": entry.enabled,
        "conflict": c.conflict,
        "off_site": entry.off_site,  # reaches beyond its server's application; asks nothing
        "proposal": said,  # an assistant's unconfirmed proposal (source: assistant in the file)
    }


async def kinds_list(settings: Settings, out: TextIO, err: TextIO, *, as_json: bool = False) -> int:
    if not settings.mcp:
        err.write(no_mcp_servers(settings))
    found = await survey(settings)
    entries = ordered(found.entries)
    if as_json:
        # Proposals first, as in the text: they wait for a person.
        entries.sort(key=lambda e: proposal(found, e) is None)
        for entry in entries:
            line = json.dumps(entry_json(entry, proposal(found, entry)), ensure_ascii=False)
            out.write(line + "\n")
        report_failures(found, err)
        return found.exit_code
    out.write(_list_text(found, entries))
    return found.exit_code


_HEADER = ("TOOL", "CLASS", "SENDS OUT", "OFF-SITE", "SWITCH", "SOURCE", "REASON")


def _row(entry: CatalogEntry) -> tuple[str, ...]:
    c = entry.classification
    return (
        entry.name,
        str(c.tool_class),
        "yes" if c.sends_out else "no",
        "yes" if entry.off_site else "no",
        "on" if entry.enabled else "off",
        str(c.source),
        c.reason,
    )


def _list_text(found: Survey, entries: list[CatalogEntry]) -> str:
    lines = [_kinds_line(found), f"Switches: {found.database.note}.", ""]
    groups: list[tuple[str, list[CatalogEntry]]] = []
    lines += _proposal_lines(found, entries)
    unsure = [e for e in entries if e.classification.unsure]
    if unsure:
        groups.append(
            (
                "Unsure: nothing tells what these do, so they count as destructive.\n"
                "Decide them in the kinds file (`palui kinds draft` writes one to start from).",
                unsure,
            )
        )
    for report in found.reports:
        if report.state is not ConnectorState.CONNECTED:
            continue
        sure = [e for e in entries if e.connector_id == report.id and not e.classification.unsure]
        count = len(report.entries)
        heading = f"{report.id} ({count} tool{'s' if count != 1 else ''}"
        heading += f"; {report.note}" if report.note else ""
        heading += f", {count - len(sure)} unsure above" if len(sure) != count else ""
        heading += "; paused in palui.toml: none offered)" if report.paused else ")"
        groups.append((heading, sure))
    rows = [_row(e) for e in entries]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(_HEADER[:-1])]

    def fmt(cells: tuple[str, ...]) -> str:
        head = "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=False))
        return f"  {head}  {cells[-1]}".rstrip()

    if rows:
        lines.append(fmt(_HEADER))
    for heading, group in groups:
        lines += ["", heading]
        if not group:
            lines.append("  (no tools)")
        for entry in group:
            lines.append(fmt(_row(entry)))
            if entry.classification.conflict:
                lines.append(f"      ! conflict: {entry.classification.conflict}")
            if entry.changed:
                lines.append("      ! its definition changed since it was classified")
    if found.failed:
        lines += ["", "Not connected (their tools are missing from this list):"]
        lines += [f"  {r.id}: {r.problem}" for r in found.failed]
    lines += ["", _summary(found, entries)]
    return "\n".join(lines) + "\n"


def _proposal_lines(found: Survey, entries: list[CatalogEntry]) -> list[str]:
    """The assistant's proposals, apart and first: each waits for a person to confirm it."""
    proposed = [(e, p) for e in entries if (p := proposal(found, e)) is not None]
    if not proposed:
        return []
    lines = [
        f"Proposed by an assistant, not confirmed ({len(proposed)}). Until you confirm one it "
        "can only make a class stricter:",
        f"confirm it in {found.kinds_path} by changing its source to you, or set the class on "
        "the /connectors card.",
    ]
    for entry, said in proposed:
        sends = ", sends out" if said.sends_out else ""
        now = f"now {entry.classification.tool_class}"
        lines.append(f"  {entry.name}: proposed {said.tool_class}{sends} ({now}): {said.reason}")
    return [*lines, ""]


def _kinds_line(found: Survey) -> str:
    if found.kinds is None:
        return (
            f"Kinds file: none at {found.kinds_path} "
            "(classes come from annotations and inference; `palui kinds draft` writes one)."
        )
    infer_word = "on" if found.kinds.infer else "off"
    named = len(found.kinds.tools) + len(found.kinds.bare)
    return f"Kinds file: {found.kinds.path} ({named} tools named, inference {infer_word})."


def _summary(found: Survey, entries: list[CatalogEntry]) -> str:
    connected = sum(r.state is ConnectorState.CONNECTED for r in found.reports)
    unsure = sum(e.classification.unsure for e in entries)
    conflicts = sum(bool(e.classification.conflict) for e in entries)
    on = sum(e.enabled for e in entries)
    text = (
        f"{len(entries)} tools from {connected} connector{'s' if connected != 1 else ''}: "
        f"{on} on, {unsure} unsure, {conflicts} with a conflict."
    )
    if found.failed:
        text += f" {len(found.failed)} connector(s) did not connect: tools are missing."
    return text
