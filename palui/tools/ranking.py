"""Which connectors are most relevant to a message: BM25 over tool names and descriptions.

Connectors are ranked whole (a connector's tools make sense together); no network, no model.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

TOKEN_RE = re.compile(r"[a-z0-9]+")
K1 = 1.2
B = 0.75


def tokens(text: str) -> list[str]:
    # Tool names are snake_case or kebab-case: split them into words too.
    words = TOKEN_RE.findall(text.lower().replace("_", " ").replace("-", " "))
    return [_stem(w) for w in words if len(w) > 1]


def _stem(word: str) -> str:
    """A crude plural/verb-form stem, enough to match "notes" with "note"."""
    for suffix in ("ing", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def rank(query: str, documents: Mapping[str, str]) -> list[str]:
    """Document keys, most relevant first; ties keep the mapping's order."""
    keys = list(documents)
    if not keys:
        return []
    bags = {key: Counter(tokens(text)) for key, text in documents.items()}
    lengths = {key: sum(bag.values()) for key, bag in bags.items()}
    average = (sum(lengths.values()) / len(keys)) or 1.0
    query_terms = set(tokens(query))
    frequency = Counter(term for bag in bags.values() for term in bag if term in query_terms)

    def score(key: str) -> float:
        bag, total = bags[key], 0.0
        for term in query_terms:
            tf = bag.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (len(keys) - frequency[term] + 0.5) / (frequency[term] + 0.5))
            total += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * lengths[key] / average))
        return total

    order = {key: index for index, key in enumerate(keys)}
    return sorted(keys, key=lambda key: (-score(key), order[key]))


def pick_within(ranked: Sequence[str], sizes: Mapping[str, int], room: int) -> list[str]:
    """Whole connectors in rank order while they fit; one too big is skipped, not cut."""
    chosen = []
    for key in ranked:
        if sizes[key] <= room:
            chosen.append(key)
            room -= sizes[key]
    return chosen
