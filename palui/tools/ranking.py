"""Which tools are most relevant to what was said: BM25 over each tool's words.

A tool's document is its name split into words (weighted most: it says what the tool does), its
connector's words, its title, its description and its arguments' names. The index is built once
per catalog version (`ToolRegistry` keeps it while the listed tools stay the same objects) as
postings per word, so scoring a turn reads only the query's words: no model, no network.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from palui.domain import RemoteTool

TOKEN_RE = re.compile(r"[a-z0-9]+")
_CAMEL_RE = re.compile(r"([a-z])([A-Z])")
K1 = 1.2
B = 0.75
NAME_WEIGHT = 3.0
CONNECTOR_WEIGHT = 1.5
TITLE_WEIGHT = 2.0
ARGUMENT_WEIGHT = 0.5
# Words that say nothing about which tool is meant; they would only add noise.
_STOPWORDS = (
    "the an and or of to in on at for from by with my me you your it its is are be this that "
    "what which who how can could would please do does did we our us they them their there "
    "some any all if so as up about into just now then than also not no yes hi hello thank "
    "thanks ok want need like get"
)
STOPWORDS = frozenset(_STOPWORDS.split())
# A connector's id also says "mcp" or "server": those don't name it.
GENERIC_CONNECTOR_WORDS = frozenset({"mcp", "server", "tool", "tools", "api", "palui"})
# A few words people say for what tool descriptions call otherwise.
SYNONYMS: Mapping[str, str] = {
    "email": "mail",
    "emails": "mail",
    "gmail": "mail",
    "inbox": "mail",
    "spreadsheet": "sheet",
    "workbook": "sheet",
    "doc": "document",
    "docs": "document",
    "pr": "pull",
    "prs": "pull",
    "folder": "directory",
    "dir": "directory",
    "k8s": "kubernetes",
    "appointment": "event",
    "meeting": "event",
    "ticket": "issue",
    "tickets": "issue",
    "db": "database",
    "repo": "repository",
    "repos": "repository",
    "total": "sum",
    # A file's extension names the application that opens it.
    "docx": "word",
    "xlsx": "excel",
    "xls": "excel",
    "webpage": "page",
    "website": "page",
}


def tokens(text: str, stems: dict[str, str] | None = None) -> list[str]:
    """Words of `text`, stemmed; snake_case, kebab-case and camelCase names split into words.
    `stems`: a cache of words already stemmed (building an index stems the same words often)."""
    spaced = _CAMEL_RE.sub(r"\1 \2", text).lower().replace("_", " ").replace("-", " ")
    found = []
    for word in TOKEN_RE.findall(spaced):
        if stems is not None and word in stems:
            stem = stems[word]
        else:
            stem = (
                _stem(SYNONYMS.get(word, word)) if len(word) > 1 and word not in STOPWORDS else ""
            )
            if stems is not None:
                stems[word] = stem
        if stem:
            found.append(stem)
    return found


def _stem(word: str) -> str:
    """A crude plural/verb-form stem, enough to match "notes" with "note"."""
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def connector_words(connector_id: str) -> frozenset[str]:
    """The words that name a connector ("mcp-github" -> github)."""
    return frozenset(t for t in tokens(connector_id) if t not in GENERIC_CONNECTOR_WORDS)


def _document(connector_id: str, remote: RemoteTool, stems: dict[str, str]) -> dict[str, float]:
    weights: dict[str, float] = defaultdict(float)

    def add(text: str, weight: float) -> None:
        for term in tokens(text, stems):
            weights[term] += weight

    add(remote.name, NAME_WEIGHT)
    add(" ".join(connector_words(connector_id)), CONNECTOR_WEIGHT)
    add(remote.title or "", TITLE_WEIGHT)
    add(remote.description, 1.0)
    properties = (remote.input_schema or {}).get("properties")
    if isinstance(properties, Mapping):
        add(" ".join(str(key) for key in properties), ARGUMENT_WEIGHT)
    return weights


@dataclass(frozen=True, slots=True)
class Query:
    """Words with weights: the newest message counts most."""

    weights: Mapping[str, float]

    @classmethod
    def of(cls, newest: str, earlier: Sequence[str] = (), earlier_weight: float = 0.4) -> Query:
        weights: dict[str, float] = {}
        for text in earlier:
            for term in tokens(text):
                weights[term] = max(weights.get(term, 0.0), earlier_weight)
        for term in tokens(newest):
            weights[term] = 1.0
        return cls(weights)

    def names(self, words: frozenset[str]) -> bool:
        return any(self.weights.get(word, 0.0) >= 1.0 for word in words)


class ToolIndex:
    """BM25 postings over the tools of one catalog version, by full name."""

    def __init__(self, tools: Sequence[tuple[str, str, RemoteTool]]) -> None:
        """`tools`: (full name, connector id, definition)."""
        stems: dict[str, str] = {}
        documents = {name: _document(cid, remote, stems) for name, cid, remote in tools}
        lengths = {name: sum(doc.values()) for name, doc in documents.items()}
        average = (sum(lengths.values()) / len(lengths)) if lengths else 1.0
        postings: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for name, doc in documents.items():
            norm = K1 * (1 - B + B * lengths[name] / (average or 1.0))
            for term, tf in doc.items():
                postings[term].append((name, tf * (K1 + 1) / (tf + norm)))
        count = len(documents)
        self._postings = {
            term: (math.log(1 + (count - len(found) + 0.5) / (len(found) + 0.5)), tuple(found))
            for term, found in postings.items()
        }
        self.size = count

    def scores(self, query: Query) -> dict[str, float]:
        """Each tool that shares a word with the query, by full name, and its score."""
        totals: dict[str, float] = defaultdict(float)
        for term, weight in query.weights.items():
            entry = self._postings.get(term)
            if entry is None:
                continue
            idf, found = entry
            for name, part in found:
                totals[name] += weight * idf * part
        return dict(totals)
