"""The skills of `PALUI_SKILLS_DIR` as this process sees them, each trusted only by digest.

The folders are the truth for what a skill says, the database for which digest the operator
trusted (`palui.db.skills`). A turn looks (`look`): each folder is read again only when a file
under it changed on disk (its stat signature: names, sizes, modification times, inodes), and
the trusted digests are cached until the settings version moves (`reload`, one of the
`Switchboard`'s reloads), so a trust given in another process applies here from the next turn.

A skill whose folder no longer has its trusted digest is *changed*: not trusted, never offered,
and the people are told once (`tell_once` marks it in the database, so one process tells).
Serving a skill (`trusted`) reads its folder afresh and checks the digest, not the cache.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from palui.db import Store
from palui.db.skills import TrustedSkill
from palui.logs import get_logger
from palui.skills.folder import BrokenSkill, Skill, read_skill

log = get_logger("palui.skills")

Notify = Callable[[str], Awaitable[None]]


class SkillState(StrEnum):
    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"  # never trusted: the operator has not looked at it
    CHANGED = "changed"  # trusted once, but a file changed since: untrusted until trusted again
    BROKEN = "broken"  # not a readable skill (no SKILL.md, bad front matter...)


@dataclass(frozen=True, slots=True)
class SkillView:
    """A folder of the skills directory and where it stands."""

    found: Skill | BrokenSkill
    state: SkillState

    @property
    def name(self) -> str:
        return self.found.name

    @property
    def digest(self) -> str:
        return self.found.digest

    @property
    def skill(self) -> Skill | None:
        return self.found if isinstance(self.found, Skill) else None


def _signature(path: Path) -> tuple[tuple[str, int, int, int, int], ...]:
    entries = []
    for current, dirs, names in os.walk(path, followlinks=False):
        for name in (*dirs, *names):
            full = os.path.join(current, name)
            try:
                info = os.lstat(full)
            except OSError:
                continue
            entries.append((full, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ino))
    return tuple(sorted(entries))


def state_of(found: Skill | BrokenSkill, trusted: TrustedSkill | None) -> SkillState:
    if isinstance(found, BrokenSkill):
        return SkillState.BROKEN
    if trusted is None:
        return SkillState.UNTRUSTED
    return SkillState.TRUSTED if trusted.digest == found.digest else SkillState.CHANGED


class SkillLibrary:
    def __init__(self, root: Path, store: Store) -> None:
        self.root = root
        self._store = store
        self._notify: Notify | None = None
        self._trusted: dict[str, TrustedSkill] | None = None  # None: not loaded yet
        self._read: dict[Path, tuple[object, Skill | BrokenSkill]] = {}
        self.views: tuple[SkillView, ...] = ()  # as of the last look

    async def start(self, notify: Notify) -> None:
        """Where "a skill changed" is told (every allowed user), once the chats exist; and a
        first look, so the skill tools are offered from the first turn."""
        self._notify = notify
        await self.look()

    async def reload(self) -> None:
        """The trusted digests as stored (the settings version moved, or first use)."""
        self._trusted = await self._store.skills.all()

    async def _trusted_now(self) -> dict[str, TrustedSkill]:
        if self._trusted is None:
            await self.reload()
        assert self._trusted is not None
        return self._trusted

    def _folders(self) -> list[Skill | BrokenSkill]:
        if not self.root.is_dir():
            self._read.clear()
            return []
        found = []
        seen = set()
        for entry in sorted(self.root.iterdir()):
            if entry.name.startswith(".") or entry.is_symlink() or not entry.is_dir():
                continue
            seen.add(entry)
            signature = _signature(entry)
            cached = self._read.get(entry)
            if cached is None or cached[0] != signature:
                cached = (signature, read_skill(entry))
                self._read[entry] = cached
            found.append(cached[1])
        for gone in set(self._read) - seen:
            del self._read[gone]
        return found

    async def look(self) -> tuple[SkillView, ...]:
        """Every folder and its state; a trusted skill that changed is told about once."""
        trusted = await self._trusted_now()
        views = tuple(
            SkillView(found, state_of(found, trusted.get(found.name))) for found in self._folders()
        )
        self.views = views
        for view in views:
            record = trusted.get(view.name)
            if view.state is SkillState.CHANGED and record is not None and not record.told:
                await self._tell_changed(record)
        return views

    async def _tell_changed(self, record: TrustedSkill) -> None:
        if not await self._store.skills.tell_once(record.name, record.digest):
            return  # another process (or an earlier look) told them
        log.warning("skill_changed", skill=record.name)
        if self._notify is not None:
            await self._notify(
                f"⚠️ The skill {record.name} changed after it was trusted (a file of its folder "
                "is not what was trusted). It is not offered until it is trusted again: look at "
                f"it, then run `palui skills trust {record.name}` or tap Trust on /skills."
            )

    def offered(self) -> tuple[Skill, ...]:
        """The trusted skills as of the last look: what a turn's prompt lists."""
        return tuple(v.skill for v in self.views if v.state is SkillState.TRUSTED and v.skill)

    async def trusted(self, name: str) -> Skill | None:
        """The skill `name`, read afresh, if its folder is exactly what was trusted."""
        trusted = (await self._trusted_now()).get(name)
        path = self.root / name
        if trusted is None or path.is_symlink() or not path.is_dir() or path.parent != self.root:
            return None
        found = read_skill(path)
        if not isinstance(found, Skill) or found.digest != trusted.digest:
            return None
        return found

    async def trust(self, name: str, by: str, *, digest: str | None = None) -> SkillView:
        """Trust the skill as its folder is now (or only if its digest starts with `digest`:
        what a person saw on a card). Raises LookupError with the reason it can't be."""
        path = self.root / name
        if path.is_symlink() or not path.is_dir():
            raise LookupError(f"there is no skill folder {name!r} in {self.root}")
        found = read_skill(path)
        if isinstance(found, BrokenSkill):
            raise LookupError(f"{name} is not a usable skill: {found.problem}")
        if digest is not None and not found.digest.startswith(digest):
            raise LookupError(f"{name} changed since it was shown: look at it again")
        await self._store.skills.trust(found.name, found.digest, by)
        await self.reload()
        log.info("skill_trusted", skill=name, digest=found.digest[:12], by=by)
        return SkillView(found, SkillState.TRUSTED)
