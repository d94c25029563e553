"""Auto-recall: before a chat turn, recall's profile matched against the person's message.

At most `timeout_s` (1.5 s): a slow or broken recall never holds up the answer. Skipped for
commands and for messages under 4 words. Every check is recorded (the skip rate on the card and
in /status). What recall says goes into the turn's context as memory, with recall's trust and
the origins of memories saved in tainted turns: `palui.turns.starting_taint` decides from them
whether the turn starts tainted (DESIGN §1.1).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from palui.db import Store
from palui.db.riders import Riders
from palui.domain import COMMAND_RE, CheckOutcome, ConnectorState
from palui.logs import get_logger
from palui.ports import Toolset

log = get_logger("palui.memory")

MIN_WORDS = 4
QUERY_CHARS = 2_000
PROFILE_LIMIT = 10
NOTHING_KNOWN = "Nothing is known about the person yet."  # the bundled server's empty answer


@dataclass(frozen=True, slots=True)
class Recalled:
    """What auto-recall adds to a turn: memory text for the context, the trust of the recall
    that said it, and the untrusted origins of the memories in it (saved in tainted turns)."""

    text: str = ""
    trust: str | None = None
    origins: tuple[str, ...] = ()


# What start-up asks recall once, as auto-recall would ask (enough words to search).
WARM_UP_QUERY = "what is known about the person"


def worth_asking(text: str) -> bool:
    stripped = text.strip()
    return not COMMAND_RE.match(stripped) and len(stripped.split()) >= MIN_WORDS


async def auto_recall(
    store: Store,
    toolset: Toolset | None,
    chat_id: int,
    turn_id: str | None,
    text: str,
    *,
    timeout_s: float,
    riders: Riders | None = None,
) -> Recalled:
    """Ask recall (the caller checked the switch and the pause); record how it went (with the
    turn's next write when `riders` is given)."""
    started = time.monotonic()

    async def record(outcome: CheckOutcome, detail: str | None = None) -> None:
        latency = (
            None if outcome is CheckOutcome.SKIPPED else round((time.monotonic() - started) * 1000)
        )
        if riders is not None:
            riders.recall_check(
                chat_id, outcome, turn_id=turn_id, detail=detail, latency_ms=latency
            )
            return
        await store.memory.record_check(
            chat_id, outcome, turn_id=turn_id, detail=detail, latency_ms=latency
        )

    if not worth_asking(text):
        await record(CheckOutcome.SKIPPED)
        return Recalled()

    if toolset is None or toolset.status().state is not ConnectorState.CONNECTED:
        await record(CheckOutcome.FAILED, "recall is not connected")
        return Recalled()
    arguments = {"query": text.strip()[:QUERY_CHARS], "limit": PROFILE_LIMIT}
    try:
        async with asyncio.timeout(timeout_s):
            outcome = await toolset.call("get_profile", arguments, timeout_s=timeout_s)
    except TimeoutError:
        log.info("auto_recall_timed_out", waited_s=timeout_s)
        await record(CheckOutcome.TIMED_OUT)
        return Recalled()
    except Exception as exc:  # recall's trouble must never stop the turn
        log.warning("auto_recall_failed", error=repr(exc))
        await record(CheckOutcome.FAILED, type(exc).__name__)
        return Recalled()
    if outcome.is_error:
        await record(CheckOutcome.FAILED, outcome.text[:200])
        return Recalled()
    found = outcome.text.strip()
    if not found or found == NOTHING_KNOWN:
        await record(CheckOutcome.EMPTY)
        return Recalled()
    await record(CheckOutcome.USED)
    return Recalled(found, toolset.trust, outcome.origins)


async def warm_recall(toolset: Toolset, *, timeout_s: float) -> None:
    """Before the first turn: the question auto-recall asks, once, with nothing recorded, so
    recall's process, search index and imports (and its connection) are warm. Raises whatever
    the call raised; the caller only logs it."""
    if toolset.status().state is not ConnectorState.CONNECTED:
        return
    arguments = {"query": WARM_UP_QUERY, "limit": PROFILE_LIMIT}
    async with asyncio.timeout(timeout_s):
        await toolset.call("get_profile", arguments, timeout_s=timeout_s)
