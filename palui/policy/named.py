"""Destinations the person gave: what a tainted turn may send to without a card (DESIGN §1.4).

In a tainted turn a call that sends out — whatever its class — to a destination the person did
not give needs approval: visiting an attacker's URL is itself the leak. A destination is given
when it appears in the person's own words (their messages of this session; a job's prompt when
the job is not tainted) or matches the operator's `[limits] allowed_destinations`:
- a host glob: `example.org` (and `www.example.org`), `*.example.org` (its subdomains);
- an e-mail glob: `*@mycompany.com`, `ana@example.org`;
- a phone number or chat id, digits with `*`: `+351*`, `-100123456789`; an `@handle`.
Both sides are read with one parser (`palui.policy.urls`, `palui.policy.hosts`), so a named host
and the host a call reaches compare in the same canonical form.
Pure: the words and the list come in as data (`palui.turns.words` reads the words).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from palui.policy.addresses import Address, AddressKind, addresses_in
from palui.policy.destinations import CallDestinations
from palui.policy.hosts import canonical_host, canonical_label
from palui.policy.urls import read_url

SHOWN = 3  # destinations a card's "why" names; the rest are counted


def _host_pattern(pattern: str) -> str:
    """A host glob in the canonical form of the hosts it is matched against (an entry written
    as a URL stands for its host, read as a client reads it)."""
    if "://" in pattern:
        reading = read_url(pattern)
        pattern = reading.host if reading and reading.host and not reading.ambiguous else pattern
    pattern = pattern.rstrip(".")
    if "*" not in pattern and "?" not in pattern:
        return canonical_host(pattern) or pattern
    labels = [
        label if "*" in label or "?" in label else (canonical_label(label) or label)
        for label in pattern.split(".")
    ]
    return ".".join(labels).removeprefix("www.")


def allows(pattern: str, address: Address) -> bool:
    """Whether one `allowed_destinations` entry lets `address` through."""
    text = pattern.strip().lower()
    if not text:
        return False
    if address.kind is AddressKind.EMAIL:
        local, at, domain = text.rpartition("@")
        return bool(at and local) and fnmatchcase(address.value, f"{local}@{_host_pattern(domain)}")
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
    ambiguous: tuple[str, ...] = ()  # URLs clients could read as going elsewhere

    def __bool__(self) -> bool:
        return bool(self.addresses) or self.unknown or bool(self.ambiguous)

    def words(self) -> str:
        """The clause a card's "why" says it with."""
        clauses = []
        if self.ambiguous:
            shown = "; ".join(self.ambiguous[:SHOWN])
            clauses.append(f"its URL may go to a host other than it seems: {shown}")
        if self.addresses:
            shown = ", ".join(address.value for address in self.addresses[:SHOWN])
            if len(self.addresses) > SHOWN:
                shown += f" and {len(self.addresses) - SHOWN} more"
            clause = f"it would reach {shown}, which you haven't named in this conversation"
            clauses.append(clause + (", and Palui can't tell where else" if self.unknown else ""))
        elif not self.ambiguous or self.unknown:
            clauses.append("it sends out, and Palui can't tell where to")
        return "; ".join(clauses)


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
        return Unnamed(missing, found.unknown, found.ambiguous)
