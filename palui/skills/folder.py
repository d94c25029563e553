"""A skill as it lies on disk: a folder with a `SKILL.md` (the open Agent Skills format).

```
skills/
  weekly-report/
    SKILL.md          ---\\nname: weekly-report\\ndescription: ...\\n---\\n<instructions>
    template.md       optional files the instructions mention
    scripts/tally.py  optional scripts: never run by Palui, only passed to palui__run_code
```

A skill's **digest** is a sha256 over every entry of its folder: each regular file's relative
path and bytes, each symlink's relative path and target (a link is never followed, so pointing
it elsewhere changes the digest), each directory's path. Any change to any of them — a file
added, removed, renamed or edited — gives a new digest, and a skill is trusted only by digest.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")  # the format's rule, ≤ 64
MAX_DESCRIPTION = 1024
MAX_FILES = 200  # a skill is a few files; a folder past this is refused, not hashed forever
MAX_BYTES = 4 * 1024 * 1024  # all of a skill's files together


@dataclass(frozen=True, slots=True)
class Skill:
    """A readable skill: its front matter, its instructions (the body of SKILL.md) and digest."""

    name: str
    description: str
    instructions: str
    path: Path
    digest: str
    files: tuple[str, ...]  # relative paths of its regular files, sorted


@dataclass(frozen=True, slots=True)
class BrokenSkill:
    """A folder that is not a usable skill, and why (shown by `palui skills list`)."""

    name: str  # the folder's name
    path: Path
    problem: str
    digest: str = ""


def folder_digest(path: Path) -> tuple[str, tuple[str, ...]]:
    """The digest of everything in `path` and its regular files' relative paths. Raises
    ValueError when the folder is too big to be a skill."""
    entries: list[tuple[str, str, Path]] = []
    for current, dirs, names in os.walk(path, followlinks=False):
        here = Path(current)
        dirs.sort()
        for name in sorted([*dirs, *names]):
            full = here / name
            relative = full.relative_to(path).as_posix()
            if full.is_symlink():
                entries.append(("link", relative, full))
            elif full.is_dir():
                entries.append(("dir", relative, full))
            elif full.is_file():
                entries.append(("file", relative, full))
            else:
                entries.append(("other", relative, full))  # a fifo or a socket: named, not read
    if len(entries) > MAX_FILES:
        raise ValueError(f"it holds more than {MAX_FILES} files")
    digest = hashlib.sha256()
    total = 0
    files = []
    for kind, relative, full in sorted(entries, key=lambda entry: entry[1]):
        digest.update(f"{kind}\0{relative}\0".encode())
        if kind == "link":
            digest.update(os.readlink(full).encode(errors="surrogateescape"))
        elif kind == "file":
            data = full.read_bytes()
            total += len(data)
            if total > MAX_BYTES:
                raise ValueError(f"its files hold more than {MAX_BYTES // (1024 * 1024)} MiB")
            digest.update(hashlib.sha256(data).digest())
            files.append(relative)
        digest.update(b"\0")
    return digest.hexdigest(), tuple(files)


def _front_matter(text: str) -> tuple[dict[str, object], str]:
    """SKILL.md's YAML front matter (between `---` lines at the top) and the body after it."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise ValueError("SKILL.md must start with a '---' line and YAML front matter")
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            try:
                data = yaml.safe_load("".join(lines[1:index])) or {}
            except yaml.YAMLError as exc:
                raise ValueError(f"SKILL.md's front matter is not valid YAML ({exc})") from None
            if not isinstance(data, dict):
                raise ValueError("SKILL.md's front matter must be a mapping (name: …)")
            return data, "".join(lines[index + 1 :]).strip()
    raise ValueError("SKILL.md's front matter has no closing '---' line")


def read_skill(path: Path) -> Skill | BrokenSkill:
    """One folder as a skill, or why it is not one."""
    try:
        digest, files = folder_digest(path)
    except (OSError, ValueError) as exc:
        return BrokenSkill(path.name, path, f"can't be read: {exc}")
    skill_file = path / SKILL_FILE
    if SKILL_FILE not in files or skill_file.is_symlink():
        return BrokenSkill(path.name, path, f"no {SKILL_FILE} (a regular file)", digest)
    try:
        meta, body = _front_matter(skill_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return BrokenSkill(path.name, path, str(exc), digest)
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not NAME_RE.match(name):
        problem = "'name' must be lowercase letters, digits and '-' (at most 64)"
        return BrokenSkill(path.name, path, problem, digest)
    if name != path.name:
        return BrokenSkill(path.name, path, f"'name' is {name!r}, not its folder's name", digest)
    if not isinstance(description, str) or not description.strip():
        return BrokenSkill(name, path, "'description' is missing", digest)
    if len(description) > MAX_DESCRIPTION:
        problem = f"'description' is over {MAX_DESCRIPTION} characters"
        return BrokenSkill(name, path, problem, digest)
    if not body:
        problem = "SKILL.md has no instructions after its front matter"
        return BrokenSkill(name, path, problem, digest)
    return Skill(name, " ".join(description.split()), body, path, digest, files)


def scan(root: Path) -> list[Skill | BrokenSkill]:
    """Every folder under `root` (not following links), by name; none when it does not exist."""
    if not root.is_dir():
        return []
    found: list[Skill | BrokenSkill] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or entry.is_symlink() or not entry.is_dir():
            continue  # a linked skill folder could change under the digest: not read
        found.append(read_skill(entry))
    return found
