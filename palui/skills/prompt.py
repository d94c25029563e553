"""The trusted skills as a turn's prompt lists them: names and descriptions only, the most
relevant to the person's message first, within a budget of characters. The instructions are
fetched with `palui__use_skill` when the model decides a skill fits."""

from __future__ import annotations

import re
from collections.abc import Sequence

from palui.skills.folder import Skill

PROMPT_BUDGET = 3_000  # characters for the whole list
WORD_RE = re.compile(r"[^\W_]{3,}", re.UNICODE)

HEADER = (
    "Skills the operator installed (instructions for particular tasks). When one fits the "
    "request, call palui__use_skill with its name before you start, and follow it; read its "
    "other files with palui__read_skill_file. A skill's script is never run for you: pass it "
    "to palui__run_code if that tool is offered."
)


def _words(text: str) -> set[str]:
    return {word.lower() for word in WORD_RE.findall(text)}


def ranked(skills: Sequence[Skill], message: str) -> list[Skill]:
    """The skills sharing the most words with `message` first (their name counts twice), the
    rest by name."""
    wanted = _words(message)

    def score(skill: Skill) -> tuple[int, str]:
        name_words = _words(skill.name.replace("-", " "))
        shared = len(wanted & _words(skill.description)) + 2 * len(wanted & name_words)
        return (-shared, skill.name)

    return sorted(skills, key=score)


def skills_prompt(skills: Sequence[Skill], message: str, budget: int = PROMPT_BUDGET) -> str:
    """The system message's skills section ("" when none is trusted)."""
    if not skills:
        return ""
    lines = [HEADER]
    used = len(HEADER)
    left_out = 0
    for skill in ranked(skills, message):
        line = f"- {skill.name}: {skill.description}"
        if used + len(line) + 1 > budget:
            left_out += 1
            continue
        lines.append(line)
        used += len(line) + 1
    if left_out:
        lines.append(f"({left_out} more skill(s) not listed here for space.)")
    return "\n".join(lines)
