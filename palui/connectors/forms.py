"""A server's form (an elicitation's JSON schema) as questions asked one field at a time, like
✏️ Edit: a field whose answers can be buttons (an enum, a boolean, a `oneOf` of constants) is
asked with one button per choice; a string, number or integer field is answered by the person's
next message. A form Palui cannot ask (a nested object, an array, too many choices) is declined.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_CHOICES = 8
MAX_FIELDS = 6
TEXT_TYPES = ("string", "number", "integer")


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    title: str
    values: tuple[Any, ...] = ()  # the choices; empty: answered by a message
    labels: tuple[str, ...] = ()
    type: str = "string"
    required: bool = True

    @property
    def typed(self) -> bool:
        return not self.values

    def read(self, text: str) -> Any | None:
        """A typed answer as the schema wants it; None when it is not one."""
        text = text.strip()
        if not text:
            return None
        if self.type == "integer":
            return int(text) if text.lstrip("-").isdecimal() else None
        if self.type == "number":
            try:
                return float(text)
            except ValueError:
                return None
        return text[:2000]

    def prompt(self) -> str:
        kind = {"integer": "a whole number", "number": "a number"}.get(self.type, "your answer")
        return f"{self.title}: reply with {kind}."

    def typed_json(self) -> str | None:
        """A field answered by a message, as stored with its question (None: by a tap), so the
        process that receives the answer reads it as this field wants."""
        if not self.typed:
            return None
        return json.dumps({"name": self.name, "title": self.title, "type": self.type})


def typed_field(stored: str | None) -> Field | None:
    """A field stored by `Field.typed_json`."""
    if stored is None:
        return None
    try:
        spec = json.loads(stored)
        return Field(str(spec["name"]), str(spec["title"]), type=str(spec["type"]))
    except (ValueError, KeyError, TypeError):
        return None


def form_fields(schema: dict[str, Any]) -> tuple[Field, ...] | None:
    """The fields of a form in the schema's order; None when one of them can't be asked."""
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict) or not 0 < len(properties) <= MAX_FIELDS:
        return None
    required = schema.get("required")
    wanted = set(required) if isinstance(required, list) else set(properties)
    fields = []
    for name, spec in properties.items():
        field = _field(str(name), spec, name in wanted)
        if field is None:
            return None
        fields.append(field)
    return tuple(fields)


def _field(name: str, spec: Any, required: bool) -> Field | None:
    if not isinstance(spec, dict):
        return None
    title = str(spec.get("title") or spec.get("description") or name)[:120]
    if spec.get("type") == "boolean":
        return Field(name, title, (True, False), ("Yes", "No"), "boolean", required)
    values = spec.get("enum")
    if isinstance(values, list):
        if not 0 < len(values) <= MAX_CHOICES:
            return None
        names = spec.get("enumNames")
        shown = names if isinstance(names, list) and len(names) == len(values) else values
        labels = tuple(str(label)[:60] for label in shown)
        return Field(name, title, tuple(values), labels, "enum", required)
    options = spec.get("oneOf")
    if isinstance(options, list):
        found = [o for o in options if isinstance(o, dict) and "const" in o]
        if len(found) != len(options) or not 0 < len(found) <= MAX_CHOICES:
            return None
        titles = tuple(str(o.get("title", o["const"]))[:60] for o in found)
        return Field(name, title, tuple(o["const"] for o in found), titles, "enum", required)
    if spec.get("type") in TEXT_TYPES:
        return Field(name, title, type=str(spec["type"]), required=required)
    return None
