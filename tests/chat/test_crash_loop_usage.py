"""A crash loop can't spend past the daily token cap: a chat turn that re-runs messages an
earlier turn was interrupted on writes the token usage it owes before a read call goes out
(with the call's record), not with the call's end, which a kill -9 mid-call never reaches.
A first attempt keeps issue 14's saving: its read call is written once, at its end, and its
usage waits for the turn's end (one INSERT for all its model calls)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from palui.db.riders import Riders
from palui.domain import CallStatus, Completion, ToolCallRequest, TurnStatus, Usage
from palui.domain.turn_record import TurnEnd, TurnStart
from palui.tools.record import CallRecord

DAY = timedelta(days=1)


async def _read_call_goes_out(store: Any, *, eager: bool) -> tuple[int, int]:
    """The tokens counted while a read call is out (as a kill -9 then would leave them), and
    once it came back."""
    chat_id = 4242
    session_id = await store.chats.current_session(chat_id)
    turn_id = f"turn-{eager}"
    await store.turns.start(TurnStart(turn_id, chat_id, session_id=session_id))
    riders = Riders(eager=eager)
    riders.model_call(turn_id, chat_id, Completion("m", "", usage=Usage(100, 20)), 0.1)
    record = CallRecord(store.tool_calls, turn_id, chat_id, riders=riders)
    call = ToolCallRequest("c1", "notes__read", "{}")
    await record.decided(call, 1, "read", "allow", "d1", "a read")
    await record.started(call, 1, {}, tool_class="read", sends_out=False)
    counted = await store.turns.tokens_since(datetime.now(UTC) - DAY)
    await record.ended(call, 1, CallStatus.OK, "done", "", 0.1)  # the call came back after all
    returned = await store.turns.tokens_since(datetime.now(UTC) - DAY)
    await store.turns.finish(TurnEnd(turn_id, TurnStatus.DONE, [], reply="ok"), riders)
    assert await store.turns.tokens_since(datetime.now(UTC) - DAY) == 120  # written once
    return counted, returned


async def test_a_rerun_counts_its_tokens_before_a_read_call_goes_out(store: Any) -> None:
    assert await _read_call_goes_out(store, eager=True) == (120, 120)


async def test_a_first_attempt_writes_its_read_call_once_and_its_usage_at_the_end(
    store: Any,
) -> None:
    assert await _read_call_goes_out(store, eager=False) == (0, 0)
