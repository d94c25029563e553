"""Turning a person's text into a safe FTS5 MATCH expression.

Every word becomes a quoted FTS5 string, so quotes, brackets, `*`, `:`, `^`, `-` and the words
AND/OR/NOT/NEAR in the text are just text: no input can make the expression fail to parse.
"""

from __future__ import annotations

import re

MAX_TERMS = 16  # more words add little to ranking and make OR queries slower
_WORD = re.compile(r"\w+", re.UNICODE)
_SEARCH_COLUMNS = "{content tags}"  # never `kind`: it is only filtered on

# Question words and glue that say nothing about what to look for (English, and the commonest
# Indonesian ones, since Palui's people write both).
_STOP_TEXT = """
    a about after again all also am an and any are as at be because been before being but by can
    could did do does doing done for from had has have having he her here hers him his how i if in
    into is it its just know me mine my myself no nor not of on once or our ours out own please
    remember remind said say she should so some such tell than that the their theirs them then
    there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself ada adalah aku akan apa
    apakah atau bagaimana bahwa dan dari dengan di dia ini itu kamu kapan ke kenapa kita mana
    mengapa saya siapa sudah tahu tentang untuk yang
    b c d e f g h j k l m n o p q r s t u v w x y z
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


def terms(text: str) -> list[str]:
    """The words of `text`, lower-cased, in order, without repeats, at most MAX_TERMS."""
    return _unique_words(text)[:MAX_TERMS]


def keywords(text: str) -> list[str]:
    """The words of `text` without stop words (all its words when only stop words are left),
    at most MAX_TERMS."""
    words = _unique_words(text)
    return ([word for word in words if word not in STOP_WORDS] or words)[:MAX_TERMS]


def _unique_words(text: str) -> list[str]:
    return list(dict.fromkeys(_WORD.findall(text.lower())))


def match_all(words: list[str]) -> str:
    """An FTS5 expression matching rows that hold every word."""
    return _join(words, " AND ")


def match_any(words: list[str]) -> str:
    """An FTS5 expression matching rows that hold any of the words, best ranked by bm25."""
    return _join(words, " OR ")


def _join(words: list[str], operator: str) -> str:
    if not words:
        raise ValueError("no words to match")
    # \w+ words hold no double quote; the quoting is what keeps FTS5 syntax out.
    quoted = operator.join('"' + word + '"' for word in words)
    return f"{_SEARCH_COLUMNS} : ({quoted})"
