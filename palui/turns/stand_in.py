"""Telling a chat, once a UTC day, that a fallback model stood in for a primary that refused the
key (`Completion.stood_in`, set by `palui.llm`): which model answered and why. The day's row and
the notice are stored together (`palui.db.stand_ins`), so no process tells it twice."""

from __future__ import annotations

from datetime import datetime

from palui.db import Store
from palui.domain import StandIn
from palui.logs import get_logger

log = get_logger("palui.turns.stand_in")


def notice(stand_in: StandIn) -> str:
    return (
        f"ℹ️ {stand_in.model} is answering in place of {stand_in.primary}, which refused: "
        f"{stand_in.reason}. Check PALUI_MODEL or what the API key's plan allows; "
        "/status shows this too. (Told once a day.)"
    )


async def tell_stand_in(store: Store, chat_id: int, stand_in: StandIn, now: datetime) -> None:
    day = now.date().isoformat()
    if await store.stand_ins.tell_once(chat_id, day, stand_in, notice(stand_in)):
        log.warning(
            "model_stood_in", primary=stand_in.primary, model=stand_in.model, chat_id=chat_id
        )
