"""`palui kinds draft`: write a kinds file from what the connectors serve now, for review."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from palui.cli.kinds import DEFAULT_DRAFT_PATH
from palui.cli.kinds.report import no_mcp_servers, report_failures
from palui.cli.kinds.survey import survey
from palui.config import Settings
from palui.domain import ConnectorState
from palui.policy.kinds_file import draft_kinds_file, parse_kinds_file


async def kinds_draft(
    settings: Settings, output: Path | None, force: bool, out: TextIO, err: TextIO
) -> int:
    path = output if output is not None else DEFAULT_DRAFT_PATH
    live = settings.kinds_file
    is_live = _same_file(path, live)
    if path.is_dir():
        err.write(f"palui kinds draft: {path} is a directory; name a file with --output.\n")
        return 1
    if path.exists() and not force:
        what = "the live kinds file" if is_live else "a file"
        err.write(
            f"palui kinds draft: {path} is {what} that already exists; not overwriting it.\n"
            "Use --output to write elsewhere, or --force to replace it.\n"
        )
        return 1
    if not settings.mcp:
        err.write(no_mcp_servers(settings))
    found = await survey(settings)
    report_failures(found, err)
    entries = found.entries
    if not any(r.state is ConnectorState.CONNECTED for r in found.reports):
        err.write("palui kinds draft: no connector connected, so there is nothing to draft.\n")
        return 1
    classifications = {e.name: e.classification for e in entries}
    infer_on = found.kinds.infer if found.kinds is not None else True
    text = draft_kinds_file(classifications, infer=infer_on)
    parse_kinds_file(text, str(path))  # a draft Palui could not read would help no one
    _write(path, text)
    unsure = sum(c.unsure for c in classifications.values())
    conflicts = sum(bool(c.conflict) for c in classifications.values())
    out.write(
        f"Wrote {path}: {len(classifications)} tools, {unsure} unsure (listed first: decide "
        f"those), {conflicts} with a conflict.\n"
    )
    if is_live:
        out.write(f"Note: {path} is the live kinds file; Palui uses it from its next start.\n")
    else:
        out.write(
            "Review it, change what is wrong, then adopt it:\n"
            f"  mv {path} {live}\n"
            f"(or point PALUI_KINDS_FILE at it). Palui reads {live} at its next start.\n"
        )
        if live.exists():
            out.write(f"{live} exists already: compare before replacing it.\n")
    missing = []
    if found.kinds is not None:
        missing = sorted(name for name in found.kinds.tools if name not in classifications)
    if missing:
        err.write(
            f"palui kinds draft: {len(missing)} tool(s) named in the live kinds file were not "
            f"seen now and are not in the draft: {', '.join(missing)}.\n"
        )
    return found.exit_code


def _same_file(first: Path, second: Path) -> bool:
    try:
        return first.resolve() == second.resolve()
    except OSError:
        return False


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
