"""A turn's start claims its updates with no statement of its own: the update's message row names
the turn that took it last (`palui.db.inbox.claimed_by`), and the inbox row names its turn once
done. So a re-run is still told which turn was interrupted on its messages, after any number of
interruptions, and the web console still shows a running turn's message."""

from __future__ import annotations

from typing import Any

from palui.domain import TurnStatus
from palui.domain.turn_record import TurnEnd, TurnStart

CHAT = 6160


async def test_each_rerun_takes_over_the_preview_the_interrupted_one_had(store: Any) -> None:
    await store.inbox.add(1, CHAT, 1, {"update_id": 1, "text": "hi"})
    _, left, *_ = await store.turns.start_chat_turn(TurnStart("a", CHAT, [(1, "hi")]), rerun=False)
    assert left is None
    await store.turns.record_preview("a", 77)  # then the process died: "a" never ended
    assert [item.turn_id for item in await store.inbox.pending(CHAT)] == ["a"]

    _, left, *_ = await store.turns.start_chat_turn(TurnStart("b", CHAT, [(1, "hi")]))
    assert left == 77  # "b" shows its answer in the preview "a" left; then it died too
    assert [item.turn_id for item in await store.inbox.pending(CHAT)] == ["b"]
    assert (await store.queues.waiting(CHAT)).inbox[0].turn_id == "b"  # the worker's look

    _, left, *_ = await store.turns.start_chat_turn(TurnStart("c", CHAT, [(1, "hi")]))
    assert left == 77
    overview = await store.turn_listing.one("c", [CHAT])
    assert overview is not None and overview.trigger == "hi"  # running, claimed by "c"

    await store.turns.finish(TurnEnd("c", TurnStatus.DONE, [1], reply="hello"))
    assert await store.inbox.pending(CHAT) == []
    overview = await store.turn_listing.one("c", [CHAT])
    assert overview is not None and overview.trigger == "hi"
