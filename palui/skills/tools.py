"""`palui__use_skill(name)` and `palui__read_skill_file(name, path)`: read tools of the built-in
`palui` connector (registered by `palui.tools.builtins`), offered while some skill is trusted.

They serve trusted skills only, read afresh and checked against the trusted digest at the call:
an untrusted or changed skill is "not a skill here", whatever the model asks. What they return
is the operator's words (the `palui` connector is trusted), so reading a trusted skill leaves a
turn clean. A skill changes nothing else: no class, switch, width or cap is read from it, and
its scripts are only text here (the model may pass one to `palui__run_code`, which asks first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from palui.domain import RemoteTool, ToolOutcome
from palui.skills.files import SkillFileRefused, read_file
from palui.skills.folder import Skill
from palui.skills.library import SkillLibrary

READ = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}

USE_SKILL = RemoteTool(
    "use_skill",
    "Get the instructions of one of the skills listed in the system message, to follow them. "
    "Lists the skill's other files, which palui__read_skill_file reads.",
    {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The skill's name."}},
        "required": ["name"],
    },
    READ,
)
READ_SKILL_FILE = RemoteTool(
    "read_skill_file",
    "Read one text file of a skill (a template, a reference, a script's source) by its path "
    "inside the skill's folder, e.g. 'scripts/tally.py'.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name."},
            "path": {"type": "string", "description": "The file's path inside the skill."},
        },
        "required": ["name", "path"],
    },
    READ,
)
TOOLS = (USE_SKILL, READ_SKILL_FILE)
NAMES = frozenset(tool.name for tool in TOOLS)


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(f"Error: {text}", is_error=True)


def _text(arguments: Mapping[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


class SkillTools:
    def __init__(self, library: SkillLibrary) -> None:
        self.library = library

    def tools(self) -> tuple[RemoteTool, ...]:
        """Offered while the last look found a trusted skill."""
        return TOOLS if self.library.offered() else ()

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        name = _text(arguments, "name")
        if name is None:
            return _error("'name' must be the name of one of the skills listed.")
        skill = await self.library.trusted(name)
        if skill is None:
            return _error(
                f"there is no trusted skill {name!r}. Use only the skills listed in the system "
                "message."
            )
        if tool == USE_SKILL.name:
            return ToolOutcome(_instructions(skill))
        path = _text(arguments, "path")
        if path is None:
            return _error("'path' must be a file's path inside the skill, e.g. 'template.md'.")
        try:
            return ToolOutcome(read_file(skill.path, path))
        except SkillFileRefused as exc:
            return _error(f"{exc}. Nothing was read.")


def _instructions(skill: Skill) -> str:
    others = [path for path in skill.files if path != "SKILL.md"]
    text = f"Skill {skill.name}: {skill.description}\n\n{skill.instructions}"
    if others:
        text += "\n\nFiles of this skill (palui__read_skill_file reads them): " + ", ".join(others)
    return text
