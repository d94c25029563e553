"""Guess a tool's class from its name, title, description and input schema.

Inference may say `read` only when every signal agrees: a reading verb, and no sign of change
anywhere (a changing or sending verb in the name, title or description; an argument named after
a changing verb; an option value such as `operation: set`; an argument that takes a whole
command; a name that runs code or queries it is given). A destination (an argument such as `to`
or `url`, or `format: uri`) makes the tool send out but leaves its class alone. With no signal
at all the tool is unsure, which the caller turns into destructive.

How far a word is trusted depends on where it stands: see `signals` for names and prose and
`schema` for arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from palui.domain import RemoteTool
from palui.policy.classes import ToolClass
from palui.policy.lexicon import Effect, word_set
from palui.policy.schema import argument_signals, arguments, destination
from palui.policy.signals import Signal, clauses, scan, words


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
    signals = [*scan(words(tool.name), "name")]
    annotations = tool.annotations if isinstance(tool.annotations, dict) else {}
    annotated_title = annotations.get("title")
    for title in dict.fromkeys((tool.title, annotated_title)):
        if isinstance(title, str):
            signals += scan(words(title), "title")
    for clause in clauses(tool.description):
        signals += scan(words(clause), "description", prose=True)
    runs_code = _runs_code(tool)
    if runs_code:
        signals.append(runs_code)
    destinations: list[str] = []
    for path, prop in arguments(tool.input_schema):
        signals += argument_signals(path, prop)
        found = destination(path, prop)
        if found:
            destinations.append(found)
    return Inference(tuple(signals), tuple(destinations))


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
