"""Reading signals from text: which verbs a name or a description uses, and where.

How far a word is trusted depends on where it stands (see `lexicon`). Names are labels, so every
listed word counts except the object of a reading verb ("list_posts"). In prose, a participle
after an article is an adjective ("the last modified time"), and a weak word counts only where a
verb can stand. Argument descriptions (`arg=True`) count strong verbs only. A reading verb found
here only says how the words after it are read (its object); what earns `read` is the name's own
verb (`own_verb`), never a reading verb in prose.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from palui.policy.lexicon import WORDS, Effect, Form, Strength, Word, word_set


@dataclass(frozen=True, slots=True)
class Signal:
    effect: Effect
    text: str  # "name verb 'delete'", "argument 'operation' may be 'set'"


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


# A new verb may follow these.
_BREAKS = word_set(
    "and or then to that which who where when while but if so before after unless until "
    "e ou entao depois que para se mas quando onde antes enquanto caso"
)
# Articles and the like: what follows is a noun phrase ("the latest updates").
_DETERMINERS = word_set(
    "a an the all any some each every this these those my your his her its our their recent "
    "latest last first new old current given specific single one many multiple more most other "
    "o os as um uma uns umas seu sua seus suas meu minha meus minhas este esta estes estas esse "
    "essa esses essas todo toda todos todas ultimo ultima ultimos ultimas recente recentes novo "
    "nova novos novas"
)
# A verb may follow these: "this tool sets", "can delete", "pode apagar".
_SUBJECTS = word_set(
    "it tool function endpoint api server will can may must should could would also please "
    "ela ele isso isto ferramenta funcao servidor pode podem deve devem vai vao tambem"
)
_PASSIVE = word_set("be is are was were been being get gets ser sera serao foi foram sao e")


def scan(tokens: list[str], where: str, *, prose: bool = False, arg: bool = False) -> list[Signal]:
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
        if word.form is not Form.ED:
            return True
        # Participles are often adjectives: "the deleted items", "sort by created",
        # "list_installed_packages". Only a destructive one keeps counting after a reading verb.
        if det or (obj and word.effect is not Effect.DESTRUCTIVE):
            return False
        return not arg or previous in _PASSIVE
    if arg or det:
        return False
    if obj and not (prose and word.form is Form.ING):  # "list_posts", "get_result_set"
        return False
    return not (word.strength is Strength.WEAK and prose and not verb_slot)


# After "and"/"then" a description chains a second action. Verbs that only say what a reading
# tool gives back are known not to change anything; any other third-person word there that takes
# an object ("... and emails them", "... then books the cheapest") may be a verb Palui doesn't
# know, and it could change anything.
_CHAINS = word_set("and then e depois entao")
_OBJECTS = word_set(
    "the a an them it its their his her your our my all any each every this these those one "
    "o os as um uma uns umas"
)
_NEUTRAL = word_set(
    "returns provides includes contains gives yields outputs supports accepts takes uses "
    "requires allows lets helps handles matches filters sorts paginates formats parses "
    "extracts converts renders groups ranks scores highlights summarizes summarises explains "
    "resolves follows expands reports tells says means shows displays lists"
)


def unknown_actions(tokens: list[str]) -> list[str]:
    """Words in one clause that may be a second action Palui doesn't know (see `_NEUTRAL`)."""
    return [
        word
        for before, word, after in zip(tokens, tokens[1:], tokens[2:], strict=False)
        if before in _CHAINS
        and word not in WORDS
        and word not in _NEUTRAL
        and word.endswith("s")
        and not word.endswith("ss")
        and after in _OBJECTS
    ]
