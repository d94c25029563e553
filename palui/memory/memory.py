"""`Memory`: what the chat workers, the turns and the connector sheet ask about memory.

The recall connector may be missing (`[recall] enabled = false`), paused on its card, or down;
each switch is read from the database before a turn (through the `Switchboard`, which reloads
them when the settings version moves), so a tap counts from the next turn on.
Compaction (the session's summary) works without recall.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from palui.db import History, Store
from palui.db.riders import Riders
from palui.domain import RECALL_ID, CheckOutcome
from palui.memory.keeper import Keeper, SaveResult
from palui.memory.recall import Recalled, auto_recall, warm_recall
from palui.memory.switches import SKIP_WINDOW, Switch, SwitchState, skip_rate
from palui.ports import ChatModel, Toolset
from palui.tools.registry import ToolRegistry
from palui.tools.switchboard import Switchboard

NEW_SAVE_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    defaults: SwitchState = field(default_factory=SwitchState)  # palui.toml's [recall]
    history_messages: int = 30  # the messages a compacted session keeps as they are
    compact_after: int = 40  # past this many, the older ones are summarised
    recall_timeout_s: float = 1.5


class Memory:
    def __init__(
        self,
        store: Store,
        model: ChatModel,
        registry: ToolRegistry,
        config: MemoryConfig,
        *,
        is_paused: Callable[[str], bool],
    ) -> None:
        self._store = store
        self._registry = registry
        self._config = config
        self._is_paused = is_paused
        self.switches = config.defaults
        self.recent_checks: Sequence[str] = ()
        self._board: Switchboard | None = None
        self._keeper = Keeper(
            store,
            model,
            compact_after=config.compact_after,
            keep=config.history_messages,
            recall=self.toolset,
            saving=lambda: self._on(Switch.AUTO_SAVE),
        )

    # -- state -----------------------------------------------------------------------------------

    def toolset(self) -> Toolset | None:
        return self._registry.get(RECALL_ID)

    @property
    def available(self) -> bool:
        """Recall is configured and not paused on its card."""
        return self.toolset() is not None and not self._is_paused(RECALL_ID)

    def _on(self, switch: Switch) -> bool:
        return self.available and self.switches.get(switch)

    async def refresh(self, *, checks: bool = False) -> None:
        """Read the switches from the database, and with `checks` the latest auto-recall checks
        (only /status and the recall card show them; a turn needs just the switches)."""
        stored = await self._store.memory.switches(RECALL_ID)
        d = self._config.defaults
        self.switches = SwitchState(
            d.auto_recall if stored.auto_recall is None else stored.auto_recall,
            d.auto_save if stored.auto_save is None else stored.auto_save,
            d.memory_tools if stored.memory_tools is None else stored.memory_tools,
        )
        if checks:
            self.recent_checks = await self._store.memory.recent_checks(SKIP_WINDOW)

    async def toggle(self, switch: Switch) -> bool:
        await self.refresh()
        value = not self.switches.get(switch)
        await self._store.memory.set_switch(RECALL_ID, switch.value, value)
        await self.refresh(checks=True)
        return value

    def follow(self, board: Switchboard) -> None:
        """The switches are kept fresh by `board` (it reloads them whenever the settings
        version moves, which the chat worker's look reads before every round of turns), so a
        turn and maintenance read none themselves."""
        self._board = board

    async def _fresh(self) -> None:
        if self._board is None:
            await self.refresh()  # no board (tests, one-off commands): read them now

    def offers_tools(self, connector_id: str) -> bool:
        """Whether a connector's tools may be offered as far as memory is concerned."""
        return connector_id != RECALL_ID or self.switches.memory_tools

    def skip_rate(self) -> str:
        return skip_rate(self.recent_checks)

    async def status_text(self) -> str | None:
        """/status's recall line: "auto-recall on (skipped 4 of last 20) · auto-save on"."""
        if self.toolset() is None:
            return None
        await self.refresh(checks=True)
        recall = "on" if self.switches.auto_recall else "off"
        save = "on" if self.switches.auto_save else "off"
        return f"auto-recall {recall} ({self.skip_rate()}) · auto-save {save}"

    # -- a turn ----------------------------------------------------------------------------------

    async def history(self, session_id: int) -> History:
        """The turn's history: the summary and the messages after what it covers (at most
        `compact_after`, should compaction have fallen behind)."""
        return await self._store.chats.history(
            session_id, self._config.compact_after, after_summary=True
        )

    async def warm_up(self) -> None:
        """At start, when auto-recall is on: recall asked once as before a turn, unrecorded
        (no check counts toward the skip rate), so the first turn's recall costs no more."""
        await self._fresh()
        toolset = self.toolset()
        if toolset is not None and self._on(Switch.AUTO_RECALL):
            await warm_recall(toolset, timeout_s=self._config.recall_timeout_s)

    async def recall(
        self, chat_id: int, turn_id: str, text: str, riders: Riders | None = None
    ) -> Recalled:
        """Auto-recall for a chat turn about to start (switches are read fresh). `riders`: the
        check is recorded with the turn's next write rather than on its own."""
        await self._fresh()
        if not self._on(Switch.AUTO_RECALL):
            return Recalled()
        return await auto_recall(
            self._store,
            self.toolset(),
            chat_id,
            turn_id,
            text,
            timeout_s=self._config.recall_timeout_s,
            riders=riders,
        )

    async def command_seen(self, chat_id: int) -> None:
        """A command is never looked up in recall: it counts as a skipped check."""
        await self.refresh()
        if self._on(Switch.AUTO_RECALL):
            await self._store.memory.record_check(chat_id, CheckOutcome.SKIPPED, detail="command")

    # -- between turns -----------------------------------------------------------------------------

    async def maintain(
        self, chat_id: int, outlook: tuple[int | None, int, bool] | None = None
    ) -> None:
        """Compaction and auto-save before the next turn, in the chat's worker. Never raises.
        `outlook`: what `MemoryRepo.outlook` says, if the caller read it already."""
        await self._fresh()
        await self._keeper.maintain(chat_id, outlook)

    async def save_for_new(self, chat_id: int) -> SaveResult | None:
        """/new: save what the session holds that is not saved yet. None: auto-save is off."""
        await self.refresh()
        if not self._on(Switch.AUTO_SAVE):
            return None
        await self._keeper.plan_rest(chat_id)
        try:
            async with asyncio.timeout(NEW_SAVE_TIMEOUT_S):
                return await self._keeper.save_open(chat_id)
        except TimeoutError:
            return SaveResult(False, reason="recall did not answer in time")
