"""Guess a tool's class from its name, title, description and input schema.

Inference may say `read` only when the name's own verb is a reading verb (see `own_verb`) and
nothing shows a change anywhere (a changing or sending verb in the name, title or description;
an argument named after a changing verb; an option value such as `operation: set`; an argument
that takes a whole command; a name that runs code or queries it is given; a word that mixes
alphabets to hide what it says). Words outside the name can only make the class stricter: a
reading verb in a description earns nothing. A destination (an argument such as `to` or `url`,
or `format: uri`) makes the tool send out but leaves its class alone. Without a changing signal
or an own reading verb the tool is unsure, which the caller turns into destructive; so is a tool
whose description chains on an action Palui can't read ("finds the contact and emails them").

How far a word is trusted depends on where it stands: see `signals` for names and prose and
`schema` for arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from palui.domain import RemoteTool
from palui.policy.classes import ToolClass
from palui.policy.lexicon import Effect, word_set
from palui.policy.own_verb import lookalike_words, own_verb
from palui.policy.schema import argument_signals, arguments, destination, values
from palui.policy.signals import Signal, clauses, scan, unknown_actions, words


@dataclass(frozen=True, slots=True)
class Inference:
    signals: tuple[Signal, ...] = ()  # every sign of change, then the name's own reading verb
    destinations: tuple[str, ...] = ()  # "argument 'to' is a destination"
    no_verb: str = "no verb tells what it does"  # why the name earns no `read`, when it doesn't

    @property
    def tool_class(self) -> ToolClass | None:
        """The class the signals show; None when nothing changes and the name has no reading
        verb of its own (unsure)."""
        effects = {signal.effect for signal in self.signals}
        if Effect.DESTRUCTIVE in effects:
            return ToolClass.DESTRUCTIVE
        if effects & {Effect.WRITE, Effect.SEND}:
            return ToolClass.WRITE
        return ToolClass.READ if Effect.READ in effects else None

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
        own = next((s for s in self.signals if s.effect is Effect.READ), None)
        if change is not None:
            text = change.text
        elif own is not None:
            text = f"{own.text}, no sign of change"
        else:
            text = self.no_verb
        if self.destinations:
            text += f"; sends out: {self.destinations[0]}"
        return text


def infer(tool: RemoteTool, connector: str = "") -> Inference:
    """`connector`: the id of the connector the tool comes from (`mcp-slack`), whose name may
    lead the tool's own (`slack_get_users`)."""
    texts: list[tuple[str, str]] = [("name", tool.name)]
    annotations = tool.annotations if isinstance(tool.annotations, dict) else {}
    for title in dict.fromkeys((tool.title, annotations.get("title"))):
        if isinstance(title, str):
            texts.append(("title", title))
    texts.append(("description", tool.description or ""))
    signals = [*scan(words(tool.name), "name")]
    doubts: list[str] = []  # words that may be verbs Palui doesn't know
    for where, text in texts[1:]:
        if where == "title":
            signals += scan(words(text), "title")
        else:
            for clause in clauses(text):
                tokens = words(clause)
                signals += scan(tokens, where, prose=True)
                doubts += [f"{where} word '{word}'" for word in unknown_actions(tokens)]
    runs_code = _runs_code(tool)
    if runs_code:
        signals.append(runs_code)
    destinations: list[str] = []
    for path, prop in arguments(tool.input_schema):
        signals += argument_signals(path, prop)
        texts.append((f"argument '{path}'", " ".join([path, *_strings(prop)])))
        found = destination(path, prop)
        if found:
            destinations.append(found)
    for where, text in texts:
        for word in lookalike_words(text)[:1]:
            drawn = f"{where} word '{word}' is drawn with letters of another alphabet"
            signals.append(Signal(Effect.DESTRUCTIVE, drawn))
    changes = [signal for signal in signals if signal.effect is not Effect.READ]
    own = own_verb(tool.name, connector)
    if own.verb is not None and doubts:
        doubt = f"{doubts[0]} after 'and' or 'then' may be a verb Palui doesn't know"
        return Inference(tuple(changes), tuple(destinations), doubt)
    if own.verb is not None:
        changes.append(Signal(Effect.READ, own.why))
    return Inference(tuple(changes), tuple(destinations), own.why)


def _strings(prop: dict) -> list[str]:
    """An argument's own words a person may read: its description and declared values."""
    found = [prop["description"]] if isinstance(prop.get("description"), str) else []
    return found + list(values(prop))


_RUNS = word_set("run execute exec eval evaluate invoke executar executa rodar roda")
_CODE = word_set(
    "code query queries statement expression python javascript js sql script command cmd shell "
    "bash consulta codigo"
)


def _runs_code(tool: RemoteTool) -> Signal | None:
    """`execute_query(query)`, `run_code(code)`: whatever it is given can delete too."""
    name = words(tool.name)
    verb = next((token for token in name if token in _RUNS), None)
    if verb is None:
        return None
    argument_words = [word for path, _ in arguments(tool.input_schema) for word in words(path)]
    code = next((token for token in [*name, *argument_words] if token in _CODE), None)
    if code is None:
        return None
    return Signal(Effect.DESTRUCTIVE, f"name verb '{verb}' runs any {code} it is given")
