"""One file of a skill, for `palui__read_skill_file`: inside its folder only, text only, capped.

The path the model gives is relative to the skill's folder. Refused: an absolute path, any `..`,
and any symlink on the way (a link could lead out of the folder, or change what a trusted digest
vouched for); what is read must be a regular file of the skill's, valid UTF-8 with no NUL byte,
under `MAX_FILE_BYTES`. The file is opened without following a link and checked to be the one
the checks looked at (same device and inode), so a link swapped in between is not followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

MAX_FILE_BYTES = 64 * 1024


class SkillFileRefused(ValueError):
    """Why a file of a skill is not read (the model reads the message)."""


def _parts(path: str) -> tuple[str, ...]:
    if not path.strip():
        raise SkillFileRefused("give a path inside the skill's folder, e.g. 'template.md'")
    if "\0" in path or "\\" in path:
        raise SkillFileRefused("the path holds a character a file path can't")
    pure = PurePosixPath(path.strip())
    if pure.is_absolute():
        raise SkillFileRefused("the path must be relative to the skill's folder, not absolute")
    parts = tuple(part for part in pure.parts if part != ".")
    if any(part == ".." for part in parts):
        raise SkillFileRefused("the path may not leave the skill's folder ('..')")
    if not parts:
        raise SkillFileRefused("give a file, not the folder itself")
    return parts


def read_file(folder: Path, path: str) -> str:
    """The text of `path` inside `folder`; SkillFileRefused says why not."""
    current = folder
    for part in _parts(path):
        current = current / part
        try:
            info = current.lstat()
        except OSError:
            raise SkillFileRefused(f"the skill has no file {path!r}") from None
        if stat.S_ISLNK(info.st_mode):
            raise SkillFileRefused(f"{path!r} goes through a symbolic link, which is not followed")
    if not stat.S_ISREG(info.st_mode):
        raise SkillFileRefused(f"{path!r} is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise SkillFileRefused(
            f"{path!r} is {info.st_size:,} bytes; at most {MAX_FILE_BYTES:,} are read"
        )
    try:
        descriptor = os.open(current, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        raise SkillFileRefused(f"{path!r} can't be opened") from None
    with os.fdopen(descriptor, "rb") as handle:
        opened = os.fstat(handle.fileno())
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise SkillFileRefused(f"{path!r} changed while it was read")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise SkillFileRefused(f"{path!r} is over {MAX_FILE_BYTES:,} bytes")
    if b"\0" in data:
        raise SkillFileRefused(f"{path!r} is not a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillFileRefused(f"{path!r} is not a text file (UTF-8)") from None
