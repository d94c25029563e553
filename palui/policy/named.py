"""Destinations the person gave: what a tainted turn may send to without a card (DESIGN §1.4).

In a tainted turn a call that sends out — whatever its class — to a destination the person did
not give needs approval: visiting an attacker's URL is itself the leak. A destination is given
when it appears in the person's own words (their messages of this session; a job's prompt when
the job is not tainted) or matches the operator's `[limits] allowed_destinations`:
- a host glob: `example.org` (and `www.example.org`), `*.example.org` (its subdomains);
- an e-mail glob: `*@mycompany.com`, `ana@example.org`;
- a phone number or chat id, digits with `*`: `+351*`, `-100123456789`; an `@handle`.
Pure: the words and the list come in as data (`palui.turns.words` reads the words).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from palui.policy.addresses import Address, AddressKind, addresses_in, canonical_host
from palui.policy.destinations import CallDestinations

SHOWN = 3  # destinations a card's "why" names; the rest are counted


def _host_pattern(pattern: str) -> str:
    if "://" in pattern:
        pattern = urlsplit(pattern).hostname or pattern
    labels = [
        label if "*" in label or "?" in label else (canonical_host(label) or label)
        for label in pattern.rstrip(".").split(".")
    ]
    return ".".join(labels).removeprefix("www.")


def allows(pattern: str, address: Address) -> bool:
    """Whether one `allowed_destinations` entry lets `address` through."""
    text = pattern.strip().lower()
    if not text:
        return False
    if address.kind is AddressKind.EMAIL:
        return "@" in text and not text.startswith("@") and fnmatchcase(address.value, text)
    if address.kind is AddressKind.HOST:
        return "@" not in text and fnmatchcase(address.value, _host_pattern(text))
    if address.value.startswith("@"):
        return fnmatchcase(address.value, text)
    if re.search(r"[a-z@]", text.split("://", 1)[-1]):
        return False  # a host or e-mail pattern: not for numbers
    sign = "-" if text.startswith("-") and address.kind is AddressKind.CHAT else ""
    digits = sign + re.sub(r"[^\d*?]", "", text)
    return bool(digits.strip("-")) and fnmatchcase(address.value, digits)


@dataclass(frozen=True, slots=True)
class Unnamed:
    """The destinations of a call the person did not give."""

    addresses: tuple[Address, ...] = ()
    unknown: bool = False  # where (else) it goes can't be told

    def __bool__(self) -> bool:
        return bool(self.addresses) or self.unknown

    def words(self) -> str:
        """The clause a card's "why" says it with."""
        shown = ", ".join(address.value for address in self.addresses[:SHOWN])
        if len(self.addresses) > SHOWN:
            shown += f" and {len(self.addresses) - SHOWN} more"
        if not self.addresses:
            return "it sends out, and Palui can't tell where to"
        clause = f"it would reach {shown}, which you haven't named in this conversation"
        return clause + (", and Palui can't tell where else" if self.unknown else "")


@dataclass(frozen=True, slots=True)
class NamedDestinations:
    """The addresses the person named, and the operator's allow-list."""

    named: frozenset[Address] = frozenset()
    allowed: tuple[str, ...] = ()

    @classmethod
    def of(cls, words: Iterable[str], allowed: Sequence[str] = ()) -> NamedDestinations:
        named: set[Address] = set()
        for text in words:
            named |= addresses_in(text)
        return cls(frozenset(named), tuple(allowed))

    def gives(self, address: Address) -> bool:
        return address in self.named or any(allows(p, address) for p in self.allowed)

    def unnamed(self, found: CallDestinations) -> Unnamed:
        missing = tuple(address for address in found.addresses if not self.gives(address))
        return Unnamed(missing, found.unknown)
