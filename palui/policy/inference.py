"""Guess a tool's class from its name, title, description and input schema.

Inference may say `read` only when every signal agrees: a reading verb, and no sign of change
anywhere (a changing or sending verb in the name, title or description; an argument named after
a changing verb; an option value such as `operation: set`; an argument that takes a whole
command). A destination (an argument such as `to` or `url`, or `format: uri`) makes the tool
send out but leaves its class alone. With no signal at all the tool is unsure, which the caller
turns into destructive.

How far a word is trusted depends on where it stands (see `lexicon`): argument names and option
values are labels, so there only base forms count ("delete", not "deleted_at"), and an adjective
after an article ("the last modified time") is not a verb.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

from palui.domain import RemoteTool
from palui.policy.classes import ToolClass
from palui.policy.lexicon import WORDS, Effect, Form, Strength, Word


@dataclass(frozen=True, slots=True)
class Signal:
    effect: Effect
    text: str  # "name verb 'delete'", "argument 'operation' may be 'set'"


@dataclass(frozen=True, slots=True)
class Inference:
    signals: tuple[Signal, ...] = ()
    destinations: tuple[str, ...] = ()  # "argument 'to' is a destination"

    @property
    def tool_class(self) -> ToolClass | None:
        """The class the signals show; None when there is no signal at all (unsure)."""
        effects = {signal.effect for signal in self.signals}
        if Effect.DESTRUCTIVE in effects:
            return ToolClass.DESTRUCTIVE
        if effects & {Effect.WRITE, Effect.SEND}:
            return ToolClass.WRITE
        return ToolClass.READ if effects else None

    @property
    def change(self) -> Signal | None:
        """The first signal behind the strictest changing class, if anything changes."""
        for wanted in ({Effect.DESTRUCTIVE}, {Effect.WRITE, Effect.SEND}):
            for signal in self.signals:
                if signal.effect in wanted:
                    return signal
        return None

    @property
    def sends_out(self) -> bool:
        return bool(self.destinations) or any(s.effect is Effect.SEND for s in self.signals)

    @property
    def reason(self) -> str:
        change = self.change
        if change is not None:
            text = change.text
        elif self.signals:
            text = f"{self.signals[0].text}, no sign of change"
        else:
            text = "no verb tells what it does"
        if self.destinations:
            text += f"; sends out: {self.destinations[0]}"
        return text


def infer(tool: RemoteTool) -> Inference:
    signals = [*_scan(words(tool.name), "name")]
    annotated_title = (tool.annotations or {}).get("title")
    for title in dict.fromkeys((tool.title, annotated_title)):
        if isinstance(title, str):
            signals += _scan(words(title), "title")
    for clause in clauses(tool.description):
        signals += _scan(words(clause), "description", prose=True)
    destinations: list[str] = []
    for path, prop in _properties(tool.input_schema):
        signals += _argument_signals(path, prop)
        destination = _destination(path, prop)
        if destination:
            destinations.append(destination)
    return Inference(tuple(signals), tuple(destinations))


def words(text: str) -> list[str]:
    """Lowercase ASCII words: snake_case, camelCase, kebab-case and accents undone."""
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text)
    return re.findall(r"[a-z]+|[0-9]+", text.lower())


_URL = re.compile(r"\w+://\S+")
_CLAUSE_BREAK = re.compile(r"[.!?;:,()\[\]{}<>\n\"'`/|&+=*]+|\s[-–—]+\s")


def clauses(text: str) -> list[str]:
    return [part for part in _CLAUSE_BREAK.split(_URL.sub(" ", text or "")) if part.strip()]


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# A new verb may follow these.
_BREAKS = _set(
    "and or then to that which who where when while but if so before after unless until "
    "e ou entao depois que para se mas quando onde antes enquanto caso"
)
# Articles and the like: what follows is a noun phrase ("the latest updates").
_DETERMINERS = _set(
    "a an the all any some each every this these those my your his her its our their recent "
    "latest last first new old current given specific single one many multiple more most other "
    "o os as um uma uns umas seu sua seus suas meu minha meus minhas este esta estes estas esse "
    "essa esses essas todo toda todos todas ultimo ultima ultimos ultimas recente recentes novo "
    "nova novos novas"
)
# A verb may follow these: "this tool sets", "can delete", "pode apagar".
_SUBJECTS = _set(
    "it tool function endpoint api server will can may must should could would also please "
    "ela ele isso isto ferramenta funcao servidor pode podem deve devem vai vao tambem"
)
_PASSIVE = _set("be is are was were been being get gets ser sera serao foi foram sao e")


def _scan(tokens: list[str], where: str, *, prose: bool = False, arg: bool = False) -> list[Signal]:
    """Signals in one clause. `arg`: an argument's description, where only strong verbs count."""
    found: list[Signal] = []
    obj = det = False  # inside a verb's object / right after an article
    verb_slot = True
    previous = ""
    for token in tokens:
        word = WORDS.get(token)
        if word is None:
            if token in _BREAKS:
                obj = det = False
                verb_slot = True
            elif token in _DETERMINERS or token.isdigit():
                det = True
            elif token in _SUBJECTS:
                det, verb_slot = False, True
            elif not token.endswith(("ly", "mente")):
                det = verb_slot = False  # a head noun ends an article's phrase
        elif word.effect is Effect.READ:
            if not arg and (not prose or (verb_slot and word.form is not Form.ED)):
                found.append(Signal(Effect.READ, f"{where} verb '{token}'"))
            obj, det, verb_slot = True, False, False
        else:
            if _counts(
                word, obj=obj, det=det, verb_slot=verb_slot, prose=prose, arg=arg, previous=previous
            ):
                found.append(Signal(word.effect, f"{where} verb '{token}'"))
                obj = True
            elif word.form is not Form.ED or not det:
                det = False  # it was the head noun, not an adjective before it
            verb_slot = False
        previous = token
    return found


def _counts(
    word: Word, *, obj: bool, det: bool, verb_slot: bool, prose: bool, arg: bool, previous: str
) -> bool:
    if word.strength is Strength.STRONG:
        if word.form is Form.ED:  # "the deleted items", "sort by created" are adjectives
            return not det and (not arg or previous in _PASSIVE)
        return True
    if arg or det:
        return False
    if obj and not (prose and word.form is Form.ING):  # "list_posts", "get_result_set"
        return False
    return not (word.strength is Strength.WEAK and prose and not verb_slot)


_MAX_DEPTH = 12


def _properties(schema: Any, prefix: str = "", depth: int = 0) -> Iterator[tuple[str, dict]]:
    """Every named argument, nested ones as `outer.inner`, with its schema."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            path = f"{prefix}.{name}" if prefix else str(name)
            yield path, sub if isinstance(sub, dict) else {}
            yield from _properties(sub, path, depth + 1)
    for key in ("items", "additionalProperties", "not"):
        yield from _properties(schema.get(key), prefix, depth + 1)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems", "$defs", "definitions"):
        subs = schema.get(key)
        for sub in (
            subs.values() if isinstance(subs, dict) else subs if isinstance(subs, list) else ()
        ):
            yield from _properties(sub, prefix, depth + 1)


def _values(prop: Any, depth: int = 0) -> Iterator[str]:
    """The string values an argument declares (enum, const, default, examples)."""
    if not isinstance(prop, dict) or depth > _MAX_DEPTH:
        return
    for key in ("enum", "examples"):
        if isinstance(prop.get(key), list):
            yield from (value for value in prop[key] if isinstance(value, str))
    for key in ("const", "default"):
        if isinstance(prop.get(key), str):
            yield prop[key]
    yield from _values(prop.get("items"), depth + 1)
    for key in ("anyOf", "oneOf"):
        subs = prop.get(key)
        for sub in subs if isinstance(subs, list) else ():
            yield from _values(sub, depth + 1)


_ACTION_ARGS = _set("operation operations op ops action actions method mode verb intent")
_COMMAND_WORDS = _set("command commands cmd shell script sql bash powershell comando")
_LABEL_TAILS = _set("id ids name names type types")
_HTTP_METHOD_ARGS = frozenset({"method", "http_method", "request_method"})


def _argument_signals(path: str, prop: dict) -> list[Signal]:
    leaf = words(path.rsplit(".", 1)[-1])
    joined = "_".join(leaf)
    found: list[Signal] = []
    if set(leaf) & _COMMAND_WORDS and leaf and leaf[-1] not in _LABEL_TAILS:
        found.append(Signal(Effect.DESTRUCTIVE, f"argument '{path}' can carry any command"))
    values = list(_values(prop))
    if joined in _HTTP_METHOD_ARGS and not values:
        found.append(Signal(Effect.DESTRUCTIVE, f"argument '{path}' may be any HTTP method"))
    for token in leaf:
        word = WORDS.get(token)
        if _changes(word) and word.strength is Strength.STRONG and word.form is Form.BASE:
            found.append(Signal(word.effect, f"argument '{path}' names '{token}'"))
    action_like = bool(leaf) and leaf[-1] in _ACTION_ARGS
    for value in values:
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
            found += _scan(words(clause), f"argument '{path}' description", prose=True, arg=True)
    return found


def _changes(word: Word | None) -> TypeGuard[Word]:
    return word is not None and word.effect is not Effect.READ


_DESTINATION_NAMES = _set(
    "to para cc bcc recipient recipients destinatario destinatarios destination destinations "
    "destino email emails url urls uri uris endpoint webhook channel channels phone telefone "
    "address addresses"
)
_DESTINATION_IDS = frozenset({"chat_id", "channel_id", "phone_number", "phone"})
_DESTINATION_FORMATS = _set("uri url email idn-email uri-reference iri iri-reference uri-template")
_NOT_AN_ADDRESS = frozenset({"date", "date-time", "time", "duration"})


def _destination(path: str, prop: dict) -> str | None:
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
