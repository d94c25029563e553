"""`palui skills list` and `palui skills trust <name>`, without a running daemon.

`list` shows each folder of the skills directory (PALUI_SKILLS_DIR, default `skills/` beside
palui.toml) with the start of its digest (sha256 over every file of the folder) and its state:
trusted, untrusted (never trusted), changed (a file changed since it was trusted: not offered
until trusted again) or broken (why it is not a usable skill). `trust` records the folder's
digest as it is now; every running process offers the skill from its next turn.

Exit codes: 0 fine, 1 a problem (no such skill, a broken one), 2 bad configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any, TextIO

from palui.config import Settings, load_settings
from palui.db import Database, Store
from palui.db.skills import SkillTrustRepo, TrustedSkill
from palui.logs import configure_logging
from palui.skills import SkillLibrary, SkillState
from palui.skills.folder import BrokenSkill, Skill, scan
from palui.skills.library import state_of

DIGEST_SHOWN = 16
CHANGED_NOTE = (
    "changed: a file changed since it was trusted; it is not offered until "
    "`palui skills trust <name>` again."
)


def add_skills_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    skills = sub.add_parser(
        "skills",
        help="the skills in PALUI_SKILLS_DIR and their state; `skills trust <name>`",
        description="Works without a running daemon; trusting applies from every process's "
        "next turn.",
    )
    commands = skills.add_subparsers(dest="skills_command", required=True)
    listing = commands.add_parser("list", help="each skill with its digest and state")
    listing.add_argument("--json", action="store_true", help="JSON lines for scripts")
    trust = commands.add_parser("trust", help="trust a skill's folder as it is now")
    trust.add_argument("name", help="the skill's name (its folder's)")


def run_skills(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one `palui skills` command. A ConfigError propagates (the caller exits 2)."""
    out = out or sys.stdout
    settings = load_settings(args.config)
    configure_logging(settings.log_format, "error", settings.secrets())
    return asyncio.run(_skills(settings, args, out))


async def _skills(settings: Settings, args: argparse.Namespace, out: TextIO) -> int:
    db = Database(settings.resolved_database_url)
    root = settings.resolved_skills_dir
    try:
        if args.skills_command == "trust":
            await db.migrate()  # the table trust is written to
            library = SkillLibrary(root, Store(db))
            try:
                view = await library.trust(args.name, "cli")
            except LookupError as exc:
                out.write(f"{exc}\n")
                return 1
            out.write(
                f"Trusted {view.name} ({view.digest[:DIGEST_SHOWN]}): offered from every "
                "process's next turn, until a file of its folder changes.\n"
            )
            return 0
        current, _head = await db.revisions()
        trusted = await SkillTrustRepo(db).all() if current is not None else {}
        found = scan(root)
        if args.json:
            for each in found:
                out.write(json.dumps(_json(each, trusted), ensure_ascii=False) + "\n")
        elif not found:
            out.write(f"No skills in {root} (a skill is a folder with a SKILL.md).\n")
        else:
            out.write(_table(found, trusted))
        return 0
    finally:
        await db.close()


def _json(found: Skill | BrokenSkill, trusted: dict[str, TrustedSkill]) -> dict[str, Any]:
    state = state_of(found, trusted.get(found.name))
    data: dict[str, Any] = {"name": found.name, "state": str(state), "digest": found.digest}
    if isinstance(found, Skill):
        data |= {"description": found.description, "files": list(found.files)}
    else:
        data["problem"] = found.problem
    return data


def _table(found: list[Skill | BrokenSkill], trusted: dict[str, TrustedSkill]) -> str:
    width = max(len(each.name) for each in found)
    lines = [f"{'NAME':<{width}}  {'DIGEST':<{DIGEST_SHOWN}}  STATE      DESCRIPTION"]
    for each in found:
        state = state_of(each, trusted.get(each.name))
        about = each.description if isinstance(each, Skill) else each.problem
        digest = each.digest[:DIGEST_SHOWN] or "-"
        lines.append(f"{each.name:<{width}}  {digest:<{DIGEST_SHOWN}}  {state:<9}  {about}")
    if any(state_of(e, trusted.get(e.name)) is SkillState.CHANGED for e in found):
        lines.append(CHANGED_NOTE)
    return "\n".join(lines) + "\n"
