"""Remote connectors' sign-ins under way (`oauth_sign_ins`), so the browser's return to
`/oauth/callback`, or the address a person pastes in the chat, completes a sign-in whichever
process it reaches (palui/connectors/signin.py).

The OAuth `state` is stored only as its SHA-256: the row is found by the state the browser
brings back, but a copy of the database holds no state to forge a return with. Every move is a
conditional UPDATE: a state is answered once (`pending` → `answered`, while not expired, by its
person when pasted), and its answer is taken once by the flow that waits for it (`answered` →
`taken`, the sealed code dropped in the same write).
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum

from sqlalchemy import delete, select, update

from palui.db.engine import Database
from palui.db.models import OAuthSignIn
from palui.db.sealing import SecretBox


class SignInStatus(StrEnum):
    PENDING = "pending"
    ANSWERED = "answered"
    TAKEN = "taken"


def state_hash(state: str) -> str:
    return hashlib.sha256(state.encode("utf-8")).hexdigest()


class SignInRepo:
    def __init__(self, db: Database, box: SecretBox) -> None:
        self._db = db
        self._box = box

    async def add(
        self, state: str, connector_id: str, user_id: int, now: datetime, expires_at: datetime
    ) -> None:
        """A sign-in whose link went out; rows expired by now are dropped on the way."""
        async with self._db.session() as s, s.begin():
            await s.execute(delete(OAuthSignIn).where(OAuthSignIn.expires_at <= now))
            s.add(
                OAuthSignIn(
                    state_hash=state_hash(state),
                    connector_id=connector_id,
                    user_id=user_id,
                    status=SignInStatus.PENDING,
                    created_at=now,
                    expires_at=expires_at,
                )
            )

    async def answer(
        self, state: str, answer: str, now: datetime, *, user_id: int | None = None
    ) -> bool:
        """The return with this state, taken once, while not expired. `user_id`: it was pasted
        in the chat by that person, who must be the one who started the sign-in."""
        conditions = [
            OAuthSignIn.state_hash == state_hash(state),
            OAuthSignIn.status == SignInStatus.PENDING,
            OAuthSignIn.expires_at > now,
        ]
        if user_id is not None:
            conditions.append(OAuthSignIn.user_id == user_id)
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(OAuthSignIn)
                .where(*conditions)
                .values(status=SignInStatus.ANSWERED, answer=self._box.seal(answer))
                .returning(OAuthSignIn.state_hash)
            )
            return result.first() is not None

    async def started_by(self, state: str, now: datetime) -> int | None:
        """Who started the live sign-in with this state (None: none is waiting for it)."""
        async with self._db.session() as s:
            return (
                await s.execute(
                    select(OAuthSignIn.user_id).where(
                        OAuthSignIn.state_hash == state_hash(state),
                        OAuthSignIn.status == SignInStatus.PENDING,
                        OAuthSignIn.expires_at > now,
                    )
                )
            ).scalar()

    async def take(self, state: str) -> str | None:
        """The return's answer, once, for the flow that waits for it (None: none yet)."""
        wanted = state_hash(state)
        answered = (OAuthSignIn.state_hash == wanted, OAuthSignIn.status == SignInStatus.ANSWERED)
        async with self._db.session() as s, s.begin():
            # RETURNING gives the row as written (the answer dropped): read it first; the
            # conditional UPDATE then decides who takes it.
            sealed = (await s.execute(select(OAuthSignIn.answer).where(*answered))).scalar()
            if sealed is None:
                return None
            result = await s.execute(
                update(OAuthSignIn)
                .where(*answered)
                .values(status=SignInStatus.TAKEN, answer=None)
                .returning(OAuthSignIn.state_hash)
            )
            if result.first() is None:
                return None
        return self._box.open(sealed)

    async def drop(self, state: str) -> None:
        """The flow ended (signed in, failed or timed out): its state is used up."""
        async with self._db.session() as s, s.begin():
            await s.execute(delete(OAuthSignIn).where(OAuthSignIn.state_hash == state_hash(state)))

    async def waiting_for(self, user_id: int, now: datetime) -> bool:
        """Whether this person has a sign-in whose return has not come yet."""
        async with self._db.session() as s:
            found = await s.execute(
                select(OAuthSignIn.state_hash)
                .where(
                    OAuthSignIn.user_id == user_id,
                    OAuthSignIn.status == SignInStatus.PENDING,
                    OAuthSignIn.expires_at > now,
                )
                .limit(1)
            )
            return found.first() is not None
