"""Skills (DESIGN §1.13): folders of instructions under `PALUI_SKILLS_DIR`, each with a
`SKILL.md`, trusted only by the digest of every file of its folder (`folder`, `library`), listed
in a turn's prompt by name and description (`prompt`), read through `palui__use_skill` and
`palui__read_skill_file` (`tools`, `files`). Below `palui.tools`, which registers the tools."""

from palui.skills.folder import BrokenSkill, Skill
from palui.skills.library import SkillLibrary, SkillState, SkillView
from palui.skills.prompt import skills_prompt
from palui.skills.tools import SkillTools

__all__ = [
    "BrokenSkill",
    "Skill",
    "SkillLibrary",
    "SkillState",
    "SkillTools",
    "SkillView",
    "skills_prompt",
]
