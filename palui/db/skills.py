"""Skills the operator trusted, by digest (`palui.skills`). Trusting one bumps the settings
version in the same transaction, so every process offers it from its next turn."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update

from palui.db import settings_version
from palui.db.models import SkillTrust, utcnow
from palui.db.repo import Repo


@dataclass(frozen=True, slots=True)
class TrustedSkill:
    name: str
    digest: str
    trusted_by: str
    told: bool  # the people were told that its folder changed since


class SkillTrustRepo(Repo):
    async def all(self) -> dict[str, TrustedSkill]:
        async with self._db.session() as s:
            rows = await s.scalars(select(SkillTrust))
            return {r.name: TrustedSkill(r.name, r.digest, r.trusted_by, r.told) for r in rows}

    async def trust(self, name: str, digest: str, by: str) -> None:
        values = {"digest": digest, "trusted_by": by, "trusted_at": utcnow(), "told": False}
        async with self._db.session() as s, s.begin():
            await s.execute(
                self._insert(SkillTrust)
                .values(name=name, **values)
                .on_conflict_do_update(index_elements=["name"], set_=values)
            )
            await settings_version.bump(s, self._insert)

    async def tell_once(self, name: str, digest: str) -> bool:
        """Mark that the people are told the skill trusted at `digest` changed: True for the
        one caller (in any process) that marked it, who then tells them."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(SkillTrust)
                .where(SkillTrust.name == name, SkillTrust.digest == digest)
                .where(SkillTrust.told.is_(False))
                .values(told=True)
            )
            return bool(getattr(result, "rowcount", 0))
