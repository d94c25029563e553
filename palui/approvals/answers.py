"""Reading a person's answer to an edit question as a value of the argument's type.

The tool's input schema says the type (`type`, a list of types, or `anyOf`/`oneOf`); where it
says none, the model's value decides. Text stays text; numbers, yes/no and JSON for lists and
objects are read as such; an answer that doesn't fit is a `BadValue` saying why, for the person.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from palui.errors import GuardRejected

VALUE_CHARS = 300  # a longer value is shown cut; `.` keeps all of it

_TYPE_WORDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "yes or no",
    "array": 'a JSON list, like ["a", "b"]',
    "object": 'a JSON object, like {"key": "value"}',
    "null": "null",
}
_YES = frozenset({"true", "yes", "y", "on", "1"})
_NO = frozenset({"false", "no", "n", "off", "0"})
_MODEL_HINT = re.compile(r"\s*Call \S+ again\b.*$", re.DOTALL)  # guards speak to the model too


class BadValue(ValueError):
    """An answer that doesn't fit the argument; the message says why, for the person."""


def _schema_types(spec: Mapping[str, Any]) -> set[str]:
    declared = spec.get("type")
    types = {declared} if isinstance(declared, str) else set()
    if isinstance(declared, list):
        types |= {t for t in declared if isinstance(t, str)}
    for key in ("anyOf", "oneOf"):
        for option in spec.get(key) or ():
            if isinstance(option, Mapping):
                types |= _schema_types(option)
    return types


def _types_of(value: Any) -> set[str]:
    """An argument without a declared type takes the type of the model's value."""
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer"}
    if isinstance(value, float):
        return {"number"}
    if isinstance(value, str):
        return {"string"}
    if isinstance(value, list):
        return {"array"}
    if isinstance(value, dict):
        return {"object"}
    return set()  # unset or null: anything goes (JSON if it reads as JSON, else text)


def expected_types(spec: Mapping[str, Any], model_value: Any) -> set[str]:
    return _schema_types(spec) or _types_of(model_value)


def describe(types: set[str]) -> str:
    words = [_TYPE_WORDS[t] for t in _TYPE_WORDS if t in types and t != "null"]
    return " or ".join(words) or "any value"


def _number(text: str) -> int | float | None:
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def parse_value(text: str, spec: Mapping[str, Any], model_value: Any = None) -> Any:
    """The person's answer as a value of the argument's type; BadValue when it isn't one."""
    raw = text.strip()
    types = expected_types(spec, model_value)
    value: Any = _parse_typed(raw, types)
    enum = spec.get("enum")
    if isinstance(enum, list) and enum and value not in enum:
        folded = [v for v in enum if isinstance(v, str) and v.lower() == raw.lower()]
        if len(folded) != 1:
            options = ", ".join(show(v, 40) for v in enum[:12])
            raise BadValue(f"That isn't one of the allowed values: {options}.")
        value = folded[0]
    return value


def _parse_typed(raw: str, types: set[str]) -> Any:
    if not types:
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    if types <= {"string", "null"}:
        return None if raw == "null" and "null" in types and "string" not in types else raw
    if "null" in types and raw == "null":
        return None
    if "boolean" in types and raw.lower() in _YES | _NO:
        return raw.lower() in _YES
    if types & {"integer", "number"}:
        number = _number(raw.replace(",", "") if "," in raw and "." not in raw else raw)
        if number is not None:
            if "number" in types:
                return number
            if float(number).is_integer():
                return int(number)
    if types & {"array", "object"}:
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        if ("array" in types and isinstance(value, list)) or (
            "object" in types and isinstance(value, dict)
        ):
            return value
    if "string" in types:
        return raw
    raise BadValue(f"That isn't {describe(types)}.")


def show(value: Any, limit: int = VALUE_CHARS) -> str:
    """A value as the person reads it: text as is, anything else as JSON; long ones cut."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … ({len(text) - limit:,} more characters)"


def person_message(exc: GuardRejected) -> str:
    return _MODEL_HINT.sub("", exc.message).strip() or exc.message
