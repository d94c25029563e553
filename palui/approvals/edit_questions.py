"""The messages of a card's ✏️ Edit (palui.approvals.edits): one question per argument with
Keep / Keep the rest / Cancel buttons, closed in place once answered, and the edited card's
predecessor retired.

A question's message id is stored after it is sent; one answered or ended before that closes
itself once its id is known, so no question keeps live buttons for an edit that moved on.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from palui import callbacks
from palui.approvals.answers import describe, expected_types, show
from palui.approvals.decisions import render_arguments
from palui.callbacks import EditAction
from palui.db import Store
from palui.domain import ApprovalRecord, Button, Card, EditRecord, EditStatus, RemoteTool
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports import Cards
from palui.tools.catalog import off_site
from palui.tools.guards import Guards
from palui.tools.names import full_name, split_name
from palui.tools.registry import ToolRegistry

log = get_logger("palui.approvals.edits")

KEEP = "."
CANCELLED = "✖️ Edit cancelled. The card above still waits for Approve or Deny."


def properties(tool: RemoteTool | None) -> dict[str, Any]:
    schema_properties = (tool.input_schema or {}).get("properties") if tool else None
    return dict(schema_properties) if isinstance(schema_properties, Mapping) else {}


def tool_now(registry: ToolRegistry, name: str) -> RemoteTool | None:
    """The tool as its connector describes it now (None when it isn't reachable)."""
    parts = split_name(name)
    toolset = registry.get(parts[0]) if parts else None
    if parts is None or toolset is None:
        return None
    return next((t for t in toolset.tools() if t.name == parts[1]), None)


def descriptions(registry: ToolRegistry) -> dict[str, str]:
    return {
        full_name(toolset.id, remote.name): remote.description
        for toolset in registry.toolsets
        for remote in toolset.tools()
    }


def off_site_tools(registry: ToolRegistry) -> set[str]:
    """The tools whose cards show "off-site" (palui.tools.catalog.off_site)."""
    return {
        full_name(toolset.id, remote.name)
        for toolset in registry.toolsets
        for remote in toolset.tools()
        if off_site(toolset.id, remote)
    }


class EditQuestions:
    def __init__(
        self, store: Store, channel: Cards, registry: ToolRegistry, guards: Guards
    ) -> None:
        self._store = store
        self._edits = store.approval_edits
        self._channel = channel
        self._registry = registry
        self._guards = guards

    async def ask_next(self, edit_id: str, problem: str | None = None) -> None:
        edit = await self._edits.by_id(edit_id)
        if edit is not None and edit.status == EditStatus.ASKING:
            await self.ask(edit, problem)

    async def ask(self, edit: EditRecord, problem: str | None = None) -> None:
        record = await self._store.approvals.by_id(edit.approval_id)
        if record is None:
            return
        name = edit.fields[edit.position]
        try:
            message_id = await self._channel.send_card(
                edit.chat_id, self._question(edit, record, problem)
            )
        except ChannelError as exc:
            log.warning("edit_question_not_sent", error=str(exc))  # sent again after a restart
            return
        if not await self._edits.sent(edit.id, edit.seq, message_id):
            # Answered, cancelled or ended before its id was stored: close it now.
            latest = await self._edits.by_id(edit.id)
            status = latest.status if latest else "ended"
            text = {"asking": f"✏️ {name}: answered", "cancelled": CANCELLED}.get(
                status, "✖️ This edit has ended."
            )
            await self._replace(edit.chat_id, message_id, text)

    def _question(self, edit: EditRecord, record: ApprovalRecord, problem: str | None) -> Card:
        tool = tool_now(self._registry, record.tool)
        working = json.loads(edit.arguments)
        name = edit.fields[edit.position]
        spec = properties(tool).get(name, {}) if tool else {}
        lines = [f"✏️ Editing {record.tool} — {edit.position + 1} of {len(edit.fields)}"]
        if problem:
            lines.insert(0, f"⚠️ {problem}")
        pinned = self._guards.pinned(record.tool)
        if pinned:
            shown = ", ".join(f"{key}: {show(value, 80)}" for key, value in pinned.items())
            lines.append(f"🔒 Pinned, can't be changed: {shown}")
        description = spec.get("description") if isinstance(spec, Mapping) else None
        lines.append(f"{name}" + (f" — {str(description)[:200]}" if description else ""))
        lines.append(f"Now: {show(working[name])}" if name in working else "Now: (not set)")
        kind = describe(expected_types(spec, working.get(name)))
        lines.append(f"Send the new value ({kind}), or {KEEP} to keep it. /cancel stops editing.")
        keep = callbacks.edit_question(edit.token, EditAction.KEEP, edit.seq)
        buttons = [Button("↩️ Keep", keep)]
        if edit.position + 1 < len(edit.fields):
            keep_rest = callbacks.edit_question(edit.token, EditAction.KEEP_REST, edit.seq)
            buttons.append(Button("⏭ Keep the rest", keep_rest))
        buttons.append(Button("✖️ Cancel", callbacks.edit_question(edit.token, EditAction.CANCEL)))
        return Card("\n".join(lines), tuple(buttons))

    async def close(self, edit: EditRecord, text: str) -> None:
        """Replace the buttons of the question `edit` was at with what became of it. One whose
        id is not stored yet closes itself once sent (see `ask`)."""
        latest = await self._edits.by_id(edit.id)
        if latest is None or latest.message_id is None or latest.asked_seq != edit.seq:
            return
        await self._replace(edit.chat_id, latest.message_id, text)

    async def _replace(self, chat_id: int, message_id: int, text: str) -> None:
        with contextlib.suppress(ChannelError):
            await self._channel.edit_card(chat_id, message_id, Card(text))

    async def retire_card(self, edit: EditRecord, record: ApprovalRecord) -> None:
        """The card the person edited loses its buttons and points to the edited one."""
        if edit.card_message_id is None:
            return
        arguments, _ = render_arguments(record.arguments)
        text = (
            f"🔐 {record.tool}\n{arguments}\n"
            f"✏️ Edited by {edit.user_name} — decide on the edited card below."
        )
        with contextlib.suppress(ChannelError):
            await self._channel.edit_card(edit.chat_id, edit.card_message_id, Card(text))
