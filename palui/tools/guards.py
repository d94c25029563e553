"""Parameter guards: per-tool argument checks and pinned values (DESIGN §1.6 step 2).

Configured in palui.toml per tool full name:

    [guards."mcp-notes__add_note"]
    pin = { folder = "inbox" }                 # set whatever the model sent
    [guards."mcp-notes__add_note".args.title]
    max_length = 80                            # also min_length, pattern, enum, minimum, maximum,
                                               # required

A rejection is a `GuardRejected` whose message names the argument and the rule in plain English,
so the model can correct the call within the same turn. The tool's own input schema is checked
too where it is cheap (required properties, basic JSON types, enum).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from palui.config import ArgumentRule, ToolGuardSettings
from palui.errors import GuardRejected


class _HasGuards(Protocol):
    @property
    def guards(self) -> Mapping[str, ToolGuardSettings]: ...


@dataclass(frozen=True, slots=True)
class Rule:
    required: bool = False
    pattern: re.Pattern[str] | None = None
    enum: tuple[Any, ...] | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None

    @classmethod
    def of(cls, rule: ArgumentRule) -> Rule:
        pattern = re.compile(rule.pattern) if rule.pattern is not None else None
        return cls(
            rule.required,
            pattern,
            rule.enum,
            rule.min_length,
            rule.max_length,
            rule.minimum,
            rule.maximum,
        )


@dataclass(frozen=True, slots=True)
class ToolGuard:
    pins: Mapping[str, Any] = field(default_factory=dict)
    rules: Mapping[str, Rule] = field(default_factory=dict)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}
_TYPE_WORDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_type(value: Any, json_type: str) -> bool:
    kinds = _JSON_TYPES.get(json_type)
    if kinds is None:
        return True  # a type we don't know: the server decides
    if isinstance(value, bool) and json_type in {"integer", "number"}:
        return False
    return isinstance(value, kinds)


class Guards:
    """Every tool's guard from the settings; tools without one pass unchanged."""

    def __init__(self, guards: Mapping[str, ToolGuard] | None = None) -> None:
        self._guards = dict(guards or {})

    @classmethod
    def from_settings(cls, settings: _HasGuards) -> Guards:
        return cls(
            {
                tool: ToolGuard(
                    dict(guard.pin), {name: Rule.of(rule) for name, rule in guard.args.items()}
                )
                for tool, guard in settings.guards.items()
            }
        )

    def configured(self, tool: str) -> bool:
        return tool in self._guards

    def pinned(self, tool: str) -> dict[str, Any]:
        """The arguments the operator pinned for this tool (the model can't change them)."""
        guard = self._guards.get(tool)
        return dict(guard.pins) if guard else {}

    def apply(
        self, tool: str, arguments: dict[str, Any], schema: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The arguments with pins applied, or GuardRejected naming the argument and rule.

        `schema` is the tool's input schema, if known: its basic rules are checked as well.
        """
        guard = self._guards.get(tool)
        final = dict(arguments)
        if guard is not None:
            final.update(guard.pins)
        if schema:
            _check_schema(tool, final, schema)
        if guard is not None:
            for name, rule in guard.rules.items():
                _check_rule(tool, name, final, rule)
        return final


def missing_for_a_form(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> list[str]:
    """The required arguments a call lacks that a person can fill in on a form (each one the
    schema describes); empty when none is missing, or when one is that no form would ask."""
    required = (schema or {}).get("required")
    properties = (schema or {}).get("properties")
    if not isinstance(required, list) or not isinstance(properties, Mapping):
        return []
    missing = [name for name in required if isinstance(name, str) and name not in arguments]
    return missing if all(name in properties for name in missing) else []


def _reject(tool: str, name: str, problem: str) -> GuardRejected:
    return GuardRejected(
        f"The argument {name!r} {problem}. Call {tool} again with a corrected {name!r}."
    )


def _check_rule(tool: str, name: str, arguments: dict[str, Any], rule: Rule) -> None:
    if name not in arguments or arguments[name] is None:
        if rule.required:
            raise _reject(tool, name, "is required but was not given")
        return
    value = arguments[name]
    if rule.enum is not None and value not in rule.enum:
        allowed = ", ".join(_show(v) for v in rule.enum)
        raise _reject(tool, name, f"must be one of {allowed} (it was {_show(value)})")
    if isinstance(value, str):
        if rule.max_length is not None and len(value) > rule.max_length:
            raise _reject(
                tool,
                name,
                f"is too long: at most {rule.max_length} characters allowed (it has {len(value)})",
            )
        if rule.min_length is not None and len(value) < rule.min_length:
            raise _reject(
                tool,
                name,
                f"is too short: at least {rule.min_length} characters needed (it has {len(value)})",
            )
        if rule.pattern is not None and not rule.pattern.fullmatch(value):
            raise _reject(
                tool,
                name,
                f"must match the pattern {rule.pattern.pattern!r} (it was {_show(value)})",
            )
    elif rule.pattern is not None or rule.max_length is not None or rule.min_length is not None:
        raise _reject(tool, name, f"must be text (it was {_show(value)})")
    if rule.minimum is not None or rule.maximum is not None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _reject(tool, name, f"must be a number (it was {_show(value)})")
        if rule.minimum is not None and value < rule.minimum:
            raise _reject(tool, name, f"must be at least {rule.minimum:g} (it was {value:g})")
        if rule.maximum is not None and value > rule.maximum:
            raise _reject(tool, name, f"must be at most {rule.maximum:g} (it was {value:g})")


def _check_schema(tool: str, arguments: dict[str, Any], schema: Mapping[str, Any]) -> None:
    required = schema.get("required")
    if isinstance(required, list):
        for name in required:
            if isinstance(name, str) and name not in arguments:
                raise _reject(tool, name, "is required but was not given")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(spec, Mapping):
            continue
        json_type = spec.get("type")
        types = [json_type] if isinstance(json_type, str) else json_type
        if isinstance(types, list) and types and not any(_is_type(value, t) for t in types):
            words = " or ".join(_TYPE_WORDS.get(t, str(t)) for t in types)
            raise _reject(tool, name, f"must be {words} (it was {_show(value)})")
        enum = spec.get("enum")
        if isinstance(enum, list) and value not in enum:
            allowed = ", ".join(_show(v) for v in enum)
            raise _reject(tool, name, f"must be one of {allowed} (it was {_show(value)})")
