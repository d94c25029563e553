"""A tool's own verb: the reading verb its name is built on, the only word that can earn `read`.

A description is the server's prose, and may be written to talk Palui into a laxer class, so no
word in it (nor in a title or an argument) ever moves a class toward `read`: it can only make
the class stricter. What says `read` is the name's own verb:

- the first word of the name, once its namespace is set aside: whatever precedes the last `__`,
  `.` or `/` (`github__list_issues`, `admin.tools.list`), and leading words that spell the
  connector's id and are no verb of the lexicon (`slack_get_users` on `mcp-slack`);
- or, when no listed verb stands before it, a last word that is a reading verb and never a noun
  (`issue_read`, `actions_get`): "list", "search", "count" or "view" at the end are more often
  nouns (`email_contact_list`), so they are not taken there;
- and each word that follows a conjunction in the name (`get_and_book`) is a reading verb too,
  and no particle turns a reading verb into another verb (`check_out_cart`, `check_in_guest`).

A verb missing from the lexicon is not a reading verb: `book_flight`, `email_contact` or
`wire_money` have no own verb, so they stay unsure (destructive) unless a changing word found
elsewhere makes them a write. So do names without a verb (`weather`, `git_status`): a noun says
nothing about what the call does. A name whose letters are not all plain Latin letters
(`gеt_items` with a Cyrillic е) has no own verb either.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from itertools import pairwise

from palui.policy.lexicon import WORDS, Effect, Form, word_set
from palui.policy.signals import words

_CONNECTOR_SEPARATOR = "__"  # how a full name joins connector and tool (`palui.tools.names`)
# What sets a namespace apart in a name: `github__list_issues`, `admin.tools.list`, `users/get`.
_NAMESPACES = re.compile(r"__|[./]")
# Reading verbs that are (almost) never nouns, so they may end a name: `issue_read`, `ui_get`.
_ALWAYS_VERBS = word_set(
    "get gets fetch fetches read reads retrieve retrieves describe describes inspect inspects "
    "listar buscar obter ler consultar mostrar pesquisar exibir visualizar procurar"
)
# Words that start a second verb in a name: `get_and_delete`, `list_then_archive`.
_CONJUNCTIONS = word_set("and then or plus also e ou entao depois")
# After a reading verb these make another verb: `check_out_cart`, `check_in_guest`, `show_off`.
_PARTICLES = word_set("in out off up down over away back")
_OWN_FORMS = frozenset({Form.BASE, Form.S})


@dataclass(frozen=True, slots=True)
class OwnVerb:
    verb: str | None  # the reading verb the name is built on; None: the name earns no `read`
    why: str  # "name verb 'get'", or why the name has no reading verb of its own


def connector_of(full_name: str, tool_name: str) -> str:
    """ "mcp-slack" for "mcp-slack__slack_get_users"; "" when the name carries no connector."""
    suffix = _CONNECTOR_SEPARATOR + tool_name
    return full_name[: -len(suffix)] if full_name.endswith(suffix) else ""


def own_verb(name: str, connector: str = "") -> OwnVerb:
    if foreign_letters(name):
        return OwnVerb(None, f"name '{name}' has letters other than plain Latin ones")
    tokens = words(_NAMESPACES.split(name)[-1])
    namespace = {word for word in words(connector) if word not in WORDS}
    while tokens and tokens[0] in namespace and len(tokens) > 1:
        tokens = tokens[1:]
    verb = _verb(tokens)
    if verb is None:
        first = tokens[0] if tokens else name
        listed = WORDS.get(first)
        if listed is None:
            return OwnVerb(None, f"no reading verb of its own ('{first}' is not one Palui knows)")
        return OwnVerb(None, f"no reading verb of its own ('{first}' is not a reading verb)")
    for before, after in pairwise(tokens):
        if before in _CONJUNCTIONS and not _reads(after):
            return OwnVerb(None, f"name word '{after}' after '{before}' is not a reading verb")
        if _reads(before) and after in _PARTICLES and (before, after) != ("look", "up"):
            return OwnVerb(None, f"name words '{before} {after}' are not a reading verb")
    return OwnVerb(verb, f"name verb '{verb}'")


def _verb(tokens: list[str]) -> str | None:
    if not tokens:
        return None
    if _reads(tokens[0]):
        return tokens[0]
    last = tokens[-1]
    if last in _ALWAYS_VERBS and not any(token in WORDS for token in tokens[:-1]):
        return last
    return None


def _reads(token: str) -> bool:
    word = WORDS.get(token)
    return word is not None and word.effect is Effect.READ and word.form in _OWN_FORMS


_LETTERS = re.compile(r"[^\W\d_]+")


def foreign_letters(text: str) -> bool:
    """Whether any letter, accents undone, is not a plain Latin one (a homoglyph, another
    alphabet): such a word can't be read, so it can't be trusted to mean a reading verb."""
    return any(not _plain(word) for word in _LETTERS.findall(_unaccented(text)))


# Letters of other alphabets drawn like Latin ones (Unicode's confusables, the common ones).
_LOOKALIKES = str.maketrans("аеорсухѕіјԁӏһԛԝкмтпвгαεικνορτυχϲ", "aeopcyxsijdlhqwkmtnbraeiknoptuxc")


def lookalike_words(text: str) -> list[str]:
    """Words drawn to look like a word Palui reads while spelled with other letters: "dеlete"
    with a Cyrillic е (Latin and other letters mixed in one word), or "сору" all in Cyrillic
    that reads as a listed verb."""
    found = []
    for word in _LETTERS.findall(_unaccented(text)):
        if _plain(word):
            continue
        drawn = word.lower().translate(_LOOKALIKES)
        if any(c.isascii() for c in word) or (_plain(drawn) and drawn in WORDS):
            found.append(word)
    return found


def _unaccented(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text or "")
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _plain(word: str) -> bool:
    return word.isascii()
