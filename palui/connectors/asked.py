"""One question of a server's form as it is asked in the chat (a card per field) and as it is
stored, so a question of the 2026 protocol's input-required round continues its call after a
restart (palui/connectors/elicitation.py asks it; palui/connectors/forms.py reads the form)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import mcp.types as mcp_types

from palui.callbacks import question
from palui.connectors.forms import Field, form_fields
from palui.domain import Button

DECLINE, CANCEL = "d", "c"


@dataclass(frozen=True, slots=True)
class Round:
    """An input-required round of a call: what continues it after a restart."""

    tool: str
    arguments: dict[str, Any]
    key: str
    request_state: str | None
    answered: dict[str, Any] = field(default_factory=dict)  # the round's other responses

    def stored(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "arguments": self.arguments,
            "key": self.key,
            "request_state": self.request_state,
            "answered": self.answered,
        }

    @staticmethod
    def of(call: dict[str, Any]) -> Round:
        return Round(
            call["tool"], call["arguments"], call["key"], call["request_state"], call["answered"]
        )


def not_accepted(answer: dict[str, Any]) -> str:
    return {"decline": "declined"}.get(answer["action"], "cancelled")


@dataclass(frozen=True, slots=True)
class Asked:
    """One field of a server's form, as asked (and as stored for a restart)."""

    connector_id: str
    params: mcp_types.ElicitRequestFormParams
    fields: tuple[Field, ...]
    index: int
    round_: Round | None
    content: dict[str, Any]

    @property
    def field(self) -> Field:
        return self.fields[self.index]

    @property
    def typed(self) -> bool:
        return self.field.typed

    def card_text(self) -> str:
        said = self.params.message
        text = f"❓ {self.connector_id} asks (the server's words, not Palui's):\n{said}"
        if len(self.fields) > 1:
            text += f"\n\n({self.index + 1}/{len(self.fields)}) {self.field.title}"
        if self.field.typed:
            text += f"\n{self.field.prompt()}"
        return text

    def rows(self, token: str) -> tuple[tuple[Button, ...], ...]:
        rows: list[tuple[Button, ...]] = [
            (Button(label, question(token, str(i))),) for i, label in enumerate(self.field.labels)
        ]
        decline, cancel = question(token, DECLINE), question(token, CANCEL)
        rows.append((Button("Decline", decline), Button("Cancel", cancel)))
        return tuple(rows)

    def choice(self, choice: str) -> dict[str, Any]:
        """The answer a tap on the button `choice` gives."""
        values = self.field.values
        if choice == DECLINE:
            return {"action": "decline"}
        if choice == CANCEL or not choice.isdecimal() or int(choice) >= len(values):
            return {"action": "cancel"}
        return {"action": "accept", "value": values[int(choice)]}

    def said(self, answer: dict[str, Any], typed: str) -> str:
        """The answer as the card shows it once answered."""
        if answer["action"] != "accept":
            return not_accepted(answer)
        if typed:
            return typed[:200]
        if answer["value"] in self.field.values:
            return self.field.labels[self.field.values.index(answer["value"])]
        return str(answer["value"])[:200]

    def call_json(self) -> str | None:
        if self.round_ is None:
            return None
        return json.dumps(
            {
                **self.round_.stored(),
                "params": self.params.model_dump(mode="json", by_alias=True, exclude_none=True),
                "index": self.index,
                "content": self.content,
            }
        )

    @staticmethod
    def of(connector_id: str, call: dict[str, Any]) -> Asked | None:
        params = mcp_types.ElicitRequestFormParams.model_validate(call["params"])
        fields = form_fields(params.requested_schema)
        if fields is None:
            return None
        round_ = Round.of(call)
        return Asked(connector_id, params, fields, call["index"], round_, call["content"])
