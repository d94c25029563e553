"""Running a chat's turns: the one door the chat workers use (`TurnRunner`).

The chat layer decides *when* a turn runs (one per chat, caps, the inbox); `palui.turns`
decides *how*: an entry point per kind (`chat_turn`, `job_turn`, `webhook_turn`, `resume`), the
tool offer (`offer`), the starting taint (`taint`), one drive of the loop and how it ends
(`drive`, `ending`), and /stop (`stop`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime

from palui.approvals.decisions import Approvals
from palui.db import Store
from palui.db.turns import Ended
from palui.domain import Delivery, Fence, Inbound, JobRecord, Message, RunRecord, TurnKind
from palui.memory import Memory
from palui.observe import Metrics, Tracing
from palui.ports import Answering, ChatModel, Fences
from palui.skills import SkillLibrary
from palui.tools.catalog import ToolCatalog
from palui.tools.registry import ToolOffer, ToolRegistry
from palui.tools.switchboard import CallGate, Switchboard
from palui.turns.chat_turn import run_chat_turn
from palui.turns.drive import Drive
from palui.turns.job_turn import run_job_turn
from palui.turns.limits import Limits
from palui.turns.offer import Offers
from palui.turns.outage import ModelOutage
from palui.turns.parts import TurnParts
from palui.turns.resume import resume
from palui.turns.stop import RunningTurn, RunningTurns, StopRequests
from palui.turns.webhook_turn import run_webhook_turn

__all__ = ["Limits", "TurnRunner"]


class TurnRunner:
    def __init__(
        self,
        store: Store,
        model: ChatModel,
        channel: Answering,
        registry: ToolRegistry,
        catalog: ToolCatalog,
        approvals: Approvals,
        limits: Limits,
        *,
        now: Callable[[], datetime],
        delivery_lock: Callable[[int], asyncio.Lock],
        is_paused: Callable[[str], bool] = lambda connector_id: False,
        memory: Memory | None = None,
        board: Switchboard | None = None,
        fences: Fences | None = None,
        skills: SkillLibrary | None = None,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
        choose: Callable[[str | None], ChatModel] | None = None,
        on_stopped: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        # The switches, true to the database (`board`): synced before each offer and each call.
        self._offers = Offers(registry, catalog, limits, is_paused, board)
        gate = CallGate(board, catalog, is_paused) if board is not None else None
        self.outage = ModelOutage(model)  # one probe of the model however many chats wait
        self._parts = TurnParts(
            store,
            model,
            channel,
            catalog,
            approvals,
            limits,
            self._offers,
            now,
            delivery_lock,
            memory,
            gate,
            fences,
            skills,
            metrics or Metrics(),
            self.outage,
            tracing or Tracing(),
            choose,
        )
        self._running = RunningTurns()
        # /stop received by another process (palui.turns.stop): PostgreSQL only.
        self.stops = StopRequests(store.stop_requests, enabled=not store.db.is_sqlite)
        self._drive = Drive(self._parts, self._running, self.stops, on_stopped)

    @property
    def running(self) -> dict[int, RunningTurn]:
        return self._running.by_chat

    def stop(self, chat_id: int) -> list[str] | None:
        """Cancel the chat's running turn; the names of the tool calls it interrupted."""
        return self._running.stop(chat_id)

    def lease_lost(self, chat_id: int) -> None:
        """Another process took the chat's lease over: its running turn here ends silently."""
        self._running.lose(chat_id)

    @property
    def offers(self) -> Offers:
        return self._offers

    async def offer(self, recent: Sequence[Message], kind: TurnKind, tainted: bool) -> ToolOffer:
        return await self._offers.for_messages(recent, kind, tainted)

    # Each takes the fence of the chat lease its worker holds: the turn's writes that matter
    # are conditional on it (`LeaseLost` once another process took the chat over).
    async def run_chat_turn(
        self,
        chat_id: int,
        batch: Sequence[Inbound],
        fence: Fence | None = None,
        images: Mapping[str, tuple[str, ...]] | None = None,
        *,
        rerun: bool = True,
    ) -> Ended | None:
        """`images`: photos for this turn's model calls, by their message's text (palui.media).
        `rerun=False`: no earlier turn took these messages (see `chat_turn`). Returns the reply
        its end stored, for the worker to deliver (`palui.delivery.outbox.Outbox.deliver`)."""
        return await run_chat_turn(
            self._parts, self._drive, chat_id, batch, fence, images or {}, rerun=rerun
        )

    async def run_webhook_turn(self, delivery: Delivery, fence: Fence | None = None) -> None:
        await run_webhook_turn(self._parts, self._drive, delivery, fence)

    async def run_job_turn(
        self, run: RunRecord, job: JobRecord, fence: Fence | None = None
    ) -> None:
        await run_job_turn(self._parts, self._drive, run, job, fence)

    async def resume(self, chat_id: int, turn_id: str, fence: Fence | None = None) -> None:
        await resume(self._parts, self._drive, self.stops, chat_id, turn_id, fence)
