"""A webhook delivery summarised into its chat: tainted from the start (the payload is
untrusted), offered no tools, and a tool call the model makes up runs nothing.

The turn's end marks the delivery handled, in its own transaction (answered, failed and told,
or /stop: never summarised again) — unless the model could not be reached: then the delivery
waits for the model (`palui.turns.outage`) and a later turn takes it over."""

from __future__ import annotations

import dataclasses
import uuid

from palui.agent.turn import run_turn
from palui.domain import Delivery, Fence, TurnKind
from palui.domain.turn_record import TurnStart
from palui.logs import bound, get_logger
from palui.observe import trace_id
from palui.tools.context import CallContext, CallPorts
from palui.tools.registry import ToolOffer
from palui.tools.runner import CallRunner
from palui.turns import starting_taint as starting
from palui.turns.drive import Drive, headed
from palui.turns.parts import TurnParts
from palui.webhooks.prompt import webhook_messages

log = get_logger("palui.turns")


async def run_webhook_turn(
    parts: TurnParts, drive: Drive, delivery: Delivery, fence: Fence | None = None
) -> None:
    turn_id, chat_id = uuid.uuid4().hex, delivery.chat_id
    store = parts.store
    if not await store.webhooks.claim(delivery, turn_id):
        return  # another worker or process has it
    with bound(chat_id=chat_id, turn_id=turn_id, delivery_id=delivery.id):
        session_id = await store.chats.current_session(chat_id)
        await store.turns.start(
            TurnStart(
                turn_id,
                chat_id,
                kind=TurnKind.WEBHOOK,
                session_id=session_id,
                fence=fence,
                trace_id=trace_id(),
            )
        )
        taint = starting.webhook_turn(delivery.webhook)
        context = CallContext(
            turn_id, chat_id, TurnKind.WEBHOOK, taint, ports=CallPorts(store.tool_calls)
        )
        tools = CallRunner(context, ToolOffer({}))
        deps = dataclasses.replace(parts.deps(turn_id, chat_id, tools), tools=(), runner=None)
        messages = webhook_messages(
            delivery.webhook, delivery.instructions, delivery.content_type, delivery.body
        )
        log.info("turn_started", kind="webhook", webhook=delivery.webhook)
        loop = headed(run_turn(deps, messages), f"📨 Webhook {delivery.webhook}")
        await drive(chat_id, turn_id, loop, tools, [], None, fence)
