"""One drive of the agent loop: run it as a task (so /stop can cancel it mid model or tool
call), keep "typing" up, stream the answer, and end in an answer, a pause, a stop or a failure."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable

from palui.agent.turn import NeedsApproval
from palui.db.turns import Ended
from palui.domain import Fence, Reply, TurnStatus
from palui.errors import ChannelError, LeaseLost
from palui.logs import get_logger
from palui.ports import ReplyStream
from palui.tools.runner import CallRunner
from palui.turns import ending
from palui.turns.parts import TurnParts
from palui.turns.stop import RunningTurn, RunningTurns, StopRequests

log = get_logger("palui.turns")

TYPING_EVERY_S = 4.0  # Telegram shows "typing" for ~5 s per chat action
# A turn answered sooner shows its answer instead: it sends no chat action at all (a Bot API
# request, ~6% of the daemon's CPU under load); a slower one shows "typing" from then on.
TYPING_AFTER_S = 1.0

Loop = Awaitable[Reply | NeedsApproval]


async def headed(loop: Loop, heading: str) -> Reply | NeedsApproval:
    """The loop's answer under a heading (a job's or a webhook's)."""
    result = await loop
    if isinstance(result, Reply) and result.text.strip():
        return dataclasses.replace(result, text=f"{heading}\n{result.text.strip()}")
    return result


async def _leave(stream: ReplyStream | None, note: str | None) -> None:
    """The turn ends without its answer: its own preview keeps the text so far (and `note`);
    one taken over from an interrupted turn is removed, since it showed that turn's answer."""
    if stream is None:
        return
    if stream.adopted:
        await stream.discard()
    else:
        await stream.abort(note)


class Drive:
    def __init__(
        self,
        parts: TurnParts,
        running: RunningTurns,
        stops: StopRequests,
        on_stopped: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._parts = parts
        self._running = running
        self._stops = stops
        # What else a stopped turn ends (the servers' questions it left open).
        self._on_stopped = on_stopped

    async def __call__(
        self,
        chat_id: int,
        turn_id: str,
        loop: Loop,
        tools: CallRunner,
        update_ids: list[int],
        stream: ReplyStream | None,
        fence: Fence | None = None,
    ) -> Ended | None:
        """Drive the loop to its end; under `fence` (the chat lease the turn runs under) the
        end is written only while that lease holds. A turn whose lease was taken over ends
        without writing or sending anything and raises `LeaseLost` to its worker. Returns the
        reply its end stored (None: none, or it paused), for the worker to deliver."""
        started, metrics = time.monotonic(), self._parts.metrics
        try:
            outcome, stored = await self._drive(
                chat_id, turn_id, loop, tools, update_ids, stream, fence
            )
            metrics.turn_ended(tools.context.kind, outcome, time.monotonic() - started)
            return stored
        except LeaseLost:
            metrics.stale_write_refused("chat")
            metrics.turn_ended(tools.context.kind, "taken_over", time.monotonic() - started)
            log.warning("chat_lease_lost", turn_id=turn_id, chat_id=chat_id)
            if stream is not None:
                await stream.close()  # no more previews; the preview shown stays as it is
            raise
        finally:
            riders = tools.context.ports.riders
            if riders:  # no end carried them (a shutdown, a lost lease): a job's too
                await asyncio.shield(self._parts.store.turns.write_riders(riders))

    async def _drive(
        self,
        chat_id: int,
        turn_id: str,
        loop: Loop,
        tools: CallRunner,
        update_ids: list[int],
        stream: ReplyStream | None,
        fence: Fence | None,
    ) -> tuple[str, Ended | None]:
        """The turn's outcome (done, paused, stopped, waits, failed) and the reply stored."""
        parts = self._parts
        task: asyncio.Task[Reply | NeedsApproval] = asyncio.ensure_future(loop)
        running = self._running.by_chat[chat_id] = RunningTurn(turn_id, task, tools)
        typing = asyncio.create_task(self._keep_typing(chat_id))
        watcher = self._stops.watch(turn_id, running.stop_requested_elsewhere)
        try:
            result = await task
        except asyncio.CancelledError:
            this = asyncio.current_task()
            shutdown = this is not None and this.cancelling()
            if running.lease_lost and not shutdown:
                raise LeaseLost(chat_id) from None  # another process runs the chat now
            if not running.stop_requested or shutdown:
                raise  # shutdown: the inbox rows stay pending and run again after restart
            log.info("turn_stopped")
            await _leave(stream, "(stopped — this answer is incomplete)")
            if self._on_stopped is not None:
                try:
                    await self._on_stopped(turn_id)
                except Exception as exc:  # the stop itself goes on
                    log.warning("turn_stopped_cleanup_failed", error=str(exc))
            told = running.stopped_text  # None: the /stop's own reply already said it
            return "stopped", await ending.end(
                parts,
                turn_id,
                TurnStatus.CANCELLED,
                update_ids,
                tools,
                error="stopped",
                reply=told,
                remember=False,
                fence=fence,
            )
        except LeaseLost:
            raise
        except Exception as exc:
            await _leave(stream, None)
            return await ending.fail(parts, turn_id, update_ids, tools, exc, fence, chat_id)
        finally:
            typing.cancel()
            if watcher is not None:
                watcher.cancel()
            self._running.by_chat.pop(chat_id, None)
        if isinstance(result, NeedsApproval):
            await _leave(stream, "(waiting for your approval below)")
            await ending.pause(parts, chat_id, turn_id, result, tools, update_ids, fence)
            return "paused", None
        text = result.text.strip() or "(The model returned an empty answer.)"
        # Previews stop before the end is committed, so the reply's outbox row names the
        # preview its first part replaces (delivered by the outbox, as an edit).
        preview = await ending.finish_stream(stream) if stream is not None else None
        stored = await ending.end(
            parts,
            turn_id,
            TurnStatus.DONE,
            update_ids,
            tools,
            reply=text,
            steps=result.steps,
            budget_hit=result.budget_hit,
            preview_message_id=preview,
            fence=fence,
        )
        log.info("turn_done", steps=result.steps, tokens=result.usage.total_tokens)
        return "done", stored

    async def _keep_typing(self, chat_id: int) -> None:
        await asyncio.sleep(TYPING_AFTER_S)
        while True:
            with contextlib.suppress(ChannelError):
                await self._parts.channel.typing(chat_id)
            await asyncio.sleep(TYPING_EVERY_S)
