"""Review and edit before it runs: the card's Edit button, done as a short question-and-answer.

Tapping ✏️ Edit asks about one argument per message, the model's value prefilled; the person
sends a new value or `.` to keep it. Answers are parsed against the tool's input schema and
checked by the operator's pre hooks (palui.approvals.edit_hooks) and the parameter guards (a
refusal asks the same question again); pinned arguments are shown and never asked. After the
last answer the whole call goes through the hooks (a rewrite is applied) and the guards, and the
approval is bound to the result under a new token, so the original card goes stale, and a fresh
card is posted: it shows exactly what its Approve runs, once, through the usual claim. A form
tool's card (`form = true`) opens its questions at once (`open_form`). While an edit is open, the
person's text messages in that chat are its answers, not a new turn (`take_answers`). It all
lives in the database (palui.db.approval_edits): an edit survives a restart, and an answer moves
it on in the same transaction that marks the message handled.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from palui.approvals.answers import BadValue, parse_value, person_message, show
from palui.approvals.decisions import Approvals
from palui.approvals.edit_hooks import EditHooks, EditRefused, check_guards
from palui.approvals.edit_questions import (
    CANCELLED,
    KEEP,
    EditQuestions,
    descriptions,
    off_site_tools,
    properties,
    tool_now,
)
from palui.callbacks import CardEditButton, EditAction, EditQuestionButton
from palui.db import Store
from palui.domain import (
    ApprovalRecord,
    ApprovalStatus,
    Card,
    EditRecord,
    EditStatus,
    Inbound,
    NewEdit,
    RemoteTool,
)
from palui.errors import ChannelError, GuardRejected
from palui.logs import get_logger
from palui.policy.classify import definition_hash
from palui.ports import Cards
from palui.tools.digest import call_digest, canonical
from palui.tools.guards import Guards
from palui.tools.registry import ToolRegistry
from palui.tools.rules import ToolRules

log = get_logger("palui.approvals.edits")

STOP_COMMANDS = frozenset({"stop", "cancel"})


class EditFlow:
    def __init__(
        self,
        store: Store,
        channel: Cards,
        approvals: Approvals,
        registry: ToolRegistry,
        rules: ToolRules,
        *,
        now: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._edits = store.approval_edits
        self._channel = channel
        self._approvals = approvals
        self._registry = registry
        self._guards: Guards = rules.guards
        self._hooks = EditHooks(rules, store.turns)
        self._now = now
        self._questions = EditQuestions(store, channel, registry, rules.guards)
        approvals.open_form = self.open_form  # a form tool's card opens its questions at once

    # -- taps ----------------------------------------------------------------------------------

    async def tap(self, inbound: Inbound, button: CardEditButton | EditQuestionButton) -> str:
        """Edit on a card, or Keep / Keep the rest / Cancel on a question; the toast to show."""
        if isinstance(button, CardEditButton):
            return await self._start(inbound, button.token)
        edit = await self._edits.by_token(button.token)
        if edit is None or edit.chat_id != inbound.chat_id:
            return "This button is no longer active."
        if edit.user_id != inbound.user.id:
            return "Someone else is editing this card."
        if edit.status != EditStatus.ASKING or await self._current(edit) is None:
            return "This edit has ended."
        if button.action is EditAction.CANCEL:
            await self._cancel(edit)
            return "Edit cancelled."
        if button.seq != edit.seq:  # a button of an earlier question
            return "That question was already answered."
        keep_rest = button.action is EditAction.KEEP_REST
        if not await self._advance(edit, None, keep=True, keep_rest=keep_rest):
            return "That question was already answered."
        return "Kept."

    async def _start(self, inbound: Inbound, token: str) -> str:
        record = await self._store.approvals.by_token(token)
        if record is None:
            if await self._edits.was_edited(token):
                return "This card was edited: decide on the edited card below."
            return "This button is no longer active."
        if (refused := await self._approvals.refusal(record, inbound)) is not None:
            return refused.notice
        return await self._begin(record, inbound.user.id, inbound.user.display, inbound.update_id)

    async def open_form(self, record: ApprovalRecord, after_update: int) -> None:
        """A form tool's card opens its questions for whoever started the turn (a job's has no
        one: its ✏️ Edit waits for a tap); answers: messages after `after_update`."""
        if (requester := await self._store.turns.requester(record.turn_id)) is None:
            return
        said = await self._begin(record, requester, "you", after_update + 1)
        log.info("form_opened", tool=record.tool, said=said)

    async def _begin(
        self, record: ApprovalRecord, user_id: int, user_name: str, started_update_id: int
    ) -> str:
        if record.status != ApprovalStatus.PENDING:
            return f"Already decided ({record.status})."
        if record.expires_at <= self._now():
            return "This approval has expired. Nothing was run."
        tool = tool_now(self._registry, record.tool)
        if tool is None:
            return "Can't edit now: the tool isn't reachable. Approve or deny it as it is."
        arguments = json.loads(record.arguments)
        if call_digest(record.tool, arguments, definition_hash(tool)) != record.digest:
            return "The tool changed since this card was shown, so it can't be edited."
        pinned = self._guards.pinned(record.tool)
        declared = properties(tool)
        names = [*declared, *(name for name in arguments if name not in declared)]
        fields = tuple(name for name in names if name not in pinned)
        if not fields:
            return "Nothing to edit: this call has no arguments you can change."
        edit_id = uuid.uuid4().hex
        replaced = await self._edits.start(
            NewEdit(
                id=edit_id,
                token=secrets.token_urlsafe(16),
                approval_id=record.id,
                card_token=record.token,
                card_message_id=record.message_id,
                chat_id=record.chat_id,
                user_id=user_id,
                user_name=user_name,
                fields=fields,
                arguments=record.arguments,
                started_update_id=started_update_id,
            )
        )
        for old in replaced:
            await self._questions.close(old, "✖️ Edit stopped (another edit started).")
        log.info("approval_edit_started", tool=record.tool, chat_id=record.chat_id)
        edit = await self._edits.by_id(edit_id)
        if edit is not None:
            await self._questions.ask(edit)
        return "Editing: answer the questions below."

    # -- answers -------------------------------------------------------------------------------

    async def take_answers(self, batch: Sequence[Inbound]) -> list[Inbound]:
        """Use the messages that answer an open edit; the rest are for a turn."""
        rest = []
        for inbound in batch:
            # A file's caption is no answer: the file is for a turn (palui.media).
            typed = inbound.text is not None and inbound.attachment is None
            if not typed or inbound.edited or not await self._answer(inbound):
                rest.append(inbound)
        return rest

    async def _answer(self, inbound: Inbound) -> bool:
        for _ in range(3):  # a tap may move the edit at the same moment: look again
            edit = await self._edits.active(inbound.chat_id, inbound.user.id, self._now())
            if edit is None or inbound.update_id < (edit.started_update_id or 0):
                return False  # no edit, or a message sent before Edit was tapped
            text = inbound.text or ""
            if await self._advance(edit, inbound.update_id, keep=text.strip() == KEEP, text=text):
                return True
        return True  # it kept moving under us; the answer is not turned into a turn either

    async def _advance(
        self,
        edit: EditRecord,
        update_id: int | None,
        *,
        keep: bool = False,
        keep_rest: bool = False,
        text: str = "",
    ) -> bool:
        """Apply one answer (or Keep) to the current question; False if the edit moved meanwhile."""
        record = await self._current(edit)
        tool = tool_now(self._registry, record.tool) if record else None
        if record is None or tool is None:
            why = "the card was decided meanwhile" if record is None else "the tool isn't reachable"
            await self._edits.close(edit.id, "ended", update_id=update_id)
            await self._questions.close(edit, f"✖️ The edit ended: {why}.")
            return True
        schema = tool.input_schema or {}
        working = json.loads(edit.arguments)
        name = edit.fields[edit.position]
        if not keep:
            spec = properties(tool).get(name, {})
            try:
                value = parse_value(text, spec, working.get(name))
                if edit.position + 1 < len(edit.fields):  # the last is checked with the call
                    await self._hooks.check(record, {**working, name: value}, working)
                check_guards(self._guards, record.tool, {**working, name: value}, working, schema)
            except BadValue as exc:
                return await self._reask(edit, update_id, str(exc))
            except EditRefused as exc:
                return await self._reask(edit, update_id, f"Not allowed: {exc.message}")
            except GuardRejected as exc:
                return await self._reask(edit, update_id, f"Not allowed: {person_message(exc)}")
            working[name] = value
        position = len(edit.fields) if keep_rest else edit.position + 1
        answered = "kept" if keep else f"→ {show(working[name], 80)}"
        if position < len(edit.fields):
            moved = await self._edits.move(
                edit.id,
                seq=edit.seq,
                position=position,
                arguments=canonical(working),
                update_id=update_id,
            )
            if moved:
                await self._questions.close(edit, f"✏️ {name}: {answered}")
                await self._questions.ask_next(edit.id)
            return moved
        await self._questions.close(edit, f"✏️ {name}: {answered}")
        return await self._finish(edit, record, tool, working, update_id)

    async def _reask(self, edit: EditRecord, update_id: int | None, problem: str) -> bool:
        moved = await self._edits.move(
            edit.id,
            seq=edit.seq,
            position=edit.position,
            arguments=edit.arguments,
            update_id=update_id,
        )
        if moved:
            await self._questions.close(edit, f"✏️ {edit.fields[edit.position]}: not accepted")
            await self._questions.ask_next(edit.id, problem)
        return moved

    async def _finish(
        self,
        edit: EditRecord,
        record: ApprovalRecord,
        tool: RemoteTool,
        working: dict[str, Any],
        update_id: int | None,
    ) -> bool:
        """All answered: the whole call through the pre hooks and the guards, then bind the
        approval to the result and show it again."""
        schema = tool.input_schema or {}
        if canonical(working) == canonical(json.loads(record.arguments)):
            # Kept as the card shows it: the hooks already saw these values (and a rewrite that
            # is not idempotent must not make an unchanged call look edited).
            await self._end(
                edit, update_id, "Nothing was changed. The card above still waits.", "unchanged"
            )
            return True
        try:
            final = self._guards.apply(
                record.tool, await self._hooks.apply(record, working), schema
            )
        except EditRefused as exc:  # the last answer is asked again; nothing is bound or run
            await self._questions.close(edit, f"✏️ {edit.fields[edit.position]}: not accepted")
            moved = await self._edits.move(
                edit.id,
                seq=edit.seq,
                position=edit.position,
                arguments=edit.arguments,
                update_id=update_id,
            )
            if moved:
                await self._questions.ask_next(edit.id, f"Not allowed: {exc.message}")
            return moved
        except GuardRejected as exc:
            problem = f"Not allowed: {person_message(exc)}"
            named = [i for i, field in enumerate(edit.fields) if repr(field) in exc.message]
            if named:  # ask the argument the guards name again
                moved = await self._edits.move(
                    edit.id,
                    seq=edit.seq,
                    position=named[0],
                    arguments=canonical(working),
                    update_id=update_id,
                )
                if moved:
                    await self._questions.ask_next(edit.id, problem)
                return moved
            await self._end(edit, update_id, f"✖️ {problem}\nThe card above still waits.")
            return True
        original = json.loads(record.arguments)
        with contextlib.suppress(GuardRejected):
            original = self._guards.apply(record.tool, original, schema)
        if canonical(final) == canonical(original):
            await self._end(
                edit, update_id, "Nothing was changed. The card above still waits.", "unchanged"
            )
            return True
        definition = definition_hash(tool)
        if call_digest(record.tool, json.loads(record.arguments), definition) != record.digest:
            await self._end(edit, update_id, "✖️ The tool changed meanwhile; nothing was edited.")
            return True
        token = secrets.token_urlsafe(16)  # 128 random bits, like every card
        confirmed = await self._edits.confirm(
            edit,
            arguments=canonical(final),
            digest=call_digest(record.tool, final, definition),
            new_token=token,
            now=self._now(),
            update_id=update_id,
        )
        if confirmed == "stale":
            return False
        if confirmed == "ended":
            await self._questions.close(edit, "✖️ The edit ended: the card was decided meanwhile.")
            return True
        log.info("approval_edited", tool=record.tool, chat_id=record.chat_id)
        await self._questions.retire_card(edit, record)
        await self._post_edited(record.turn_id)
        return True

    async def _post_edited(self, turn_id: str) -> None:
        try:
            registry = self._registry
            await self._approvals.post_cards(
                turn_id, descriptions(registry), off_site_tools(registry)
            )
        except ChannelError as exc:  # the card is stored unsent: posted again at the next start
            log.warning("edited_card_not_sent", error=str(exc))

    async def _end(
        self, edit: EditRecord, update_id: int | None, text: str, status: str = "ended"
    ) -> None:
        if await self._edits.close(edit.id, status, update_id=update_id):
            with contextlib.suppress(ChannelError):
                await self._channel.send_card(edit.chat_id, Card(text))

    # -- stopping ------------------------------------------------------------------------------

    async def after_command(self, inbound: Inbound, reply: str | None) -> str | None:
        """/stop (besides stopping a running turn) and /cancel end the person's open edit; the
        card stays. Returns the command's reply, with the edit's part."""
        if inbound.command not in STOP_COMMANDS:
            return reply
        edit = await self._edits.active(inbound.chat_id, inbound.user.id, self._now())
        if edit is None or not await self._cancel(edit):
            return "Nothing is being edited." if inbound.command == "cancel" else reply
        note = "Edit cancelled. The card above still waits for Approve or Deny."
        if inbound.command == "cancel" or not reply or reply.startswith("Nothing is running"):
            return note
        return f"{reply}\n{note}"

    async def _cancel(self, edit: EditRecord) -> bool:
        if not await self._edits.close(edit.id, "cancelled"):
            return False
        log.info("approval_edit_cancelled", chat_id=edit.chat_id)
        await self._questions.close(edit, CANCELLED)
        return True

    # -- after a restart -----------------------------------------------------------------------

    async def recover(self) -> None:
        """Send what a crash kept from going out: open questions, edited cards."""
        for edit in await self._edits.unsent():
            if await self._current(edit) is None:
                await self._edits.close(edit.id, "ended")  # its card was decided meanwhile
            else:
                await self._questions.ask(edit)
        for turn_id in await self._edits.unsent_edited_cards():
            await self._post_edited(turn_id)

    # -- lookups -------------------------------------------------------------------------------

    async def _current(self, edit: EditRecord) -> ApprovalRecord | None:
        """The edited card, while it can still be decided and was not replaced."""
        record = await self._store.approvals.by_id(edit.approval_id)
        if (
            record is None
            or record.status != ApprovalStatus.PENDING
            or record.token != edit.card_token
            or record.expires_at <= self._now()
        ):
            return None
        return record
