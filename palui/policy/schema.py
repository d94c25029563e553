"""Signals from a tool's input schema: arguments named after verbs, option values that change
things, arguments that take a whole command, and destinations (the tool sends out)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeGuard

from palui.policy.lexicon import WORDS, Effect, Form, Strength, Word, word_set
from palui.policy.signals import Signal, clauses, scan, words

_MAX_DEPTH = 12


def arguments(schema: Any, prefix: str = "", depth: int = 0) -> Iterator[tuple[str, dict]]:
    """Every named argument, nested ones as `outer.inner`, with its schema."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return
    named = schema.get("properties")
    if isinstance(named, dict):
        for name, sub in named.items():
            path = f"{prefix}.{name}" if prefix else str(name)
            yield path, sub if isinstance(sub, dict) else {}
            yield from arguments(sub, path, depth + 1)
    for key in ("items", "additionalProperties", "not"):
        yield from arguments(schema.get(key), prefix, depth + 1)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems", "$defs", "definitions"):
        subs = schema.get(key)
        for sub in (
            subs.values() if isinstance(subs, dict) else subs if isinstance(subs, list) else ()
        ):
            yield from arguments(sub, prefix, depth + 1)


def values(prop: Any, depth: int = 0) -> Iterator[str]:
    """The string values an argument declares (enum, const, default, examples)."""
    if not isinstance(prop, dict) or depth > _MAX_DEPTH:
        return
    for key in ("enum", "examples"):
        if isinstance(prop.get(key), list):
            yield from (value for value in prop[key] if isinstance(value, str))
    for key in ("const", "default"):
        if isinstance(prop.get(key), str):
            yield prop[key]
    yield from values(prop.get("items"), depth + 1)
    for key in ("anyOf", "oneOf"):
        subs = prop.get(key)
        for sub in subs if isinstance(subs, list) else ():
            yield from values(sub, depth + 1)


_ACTION_ARGS = word_set("operation operations op ops action actions method mode verb intent")
_COMMAND_WORDS = word_set("command commands cmd shell script sql bash powershell comando")
_LABEL_TAILS = word_set("id ids name names type types")
_HTTP_METHOD_ARGS = frozenset({"method", "http_method", "request_method"})


def argument_signals(path: str, prop: dict) -> list[Signal]:
    leaf = words(path.rsplit(".", 1)[-1])
    joined = "_".join(leaf)
    found: list[Signal] = []
    if set(leaf) & _COMMAND_WORDS and leaf and leaf[-1] not in _LABEL_TAILS:
        found.append(Signal(Effect.DESTRUCTIVE, f"argument '{path}' can carry any command"))
    declared = list(values(prop))
    if joined in _HTTP_METHOD_ARGS and not declared:
        found.append(Signal(Effect.DESTRUCTIVE, f"argument '{path}' may be any HTTP method"))
    for token in leaf:
        word = WORDS.get(token)
        if _changes(word) and word.strength is Strength.STRONG and word.form is Form.BASE:
            found.append(Signal(word.effect, f"argument '{path}' names '{token}'"))
    action_like = bool(leaf) and leaf[-1] in _ACTION_ARGS
    for value in declared:
        tokens = words(value)
        if len(tokens) > 3:
            continue  # a sentence, not an option
        for token in tokens:
            word = WORDS.get(token)
            if (
                _changes(word)
                and word.form is Form.BASE
                and (action_like or word.strength is not Strength.NOUNISH)
            ):
                found.append(Signal(word.effect, f"argument '{path}' may be '{value}'"))
                break
    description = prop.get("description")
    if isinstance(description, str):
        for clause in clauses(description):
            found += scan(words(clause), f"argument '{path}' description", prose=True, arg=True)
    return found


def _changes(word: Word | None) -> TypeGuard[Word]:
    return word is not None and word.effect is not Effect.READ


_DESTINATION_NAMES = word_set(
    "to para cc bcc recipient recipients destinatario destinatarios destination destinations "
    "destino email emails url urls uri uris endpoint webhook channel channels phone telefone "
    "address addresses canal canais endereco enderecos"
)
_DESTINATION_IDS = frozenset({"chat_id", "channel_id", "phone_number", "phone"})
_DESTINATION_FORMATS = word_set(
    "uri url email idn-email uri-reference iri iri-reference uri-template"
)
_NOT_AN_ADDRESS = frozenset({"date", "date-time", "time", "duration"})


def destination(path: str, prop: dict) -> str | None:
    leaf = words(path.rsplit(".", 1)[-1])
    joined = "_".join(leaf)
    declared = prop.get("type")
    declared = declared if isinstance(declared, list) else [declared]
    kinds = {kind for kind in declared if isinstance(kind, str)}
    items = prop.get("items")
    fmt = prop.get("format") or (items.get("format") if isinstance(items, dict) else None)
    fmt = fmt.lower() if isinstance(fmt, str) else ""
    if fmt in _DESTINATION_FORMATS:
        return f"argument '{path}' has format '{fmt}'"
    if joined in _DESTINATION_IDS:
        return f"argument '{path}' is a destination"
    if not leaf or leaf[-1] not in _DESTINATION_NAMES or "boolean" in kinds:
        return None
    if kinds & {"integer", "number"} or fmt in _NOT_AN_ADDRESS:
        return None  # `date_to`, `valid_to`: the end of a range
    return f"argument '{path}' is a destination"
