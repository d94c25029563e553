"""Addresses: where a call sends to, and the ones a person's own words name, compared as equals.

Four kinds (DESIGN §1.4): a URL's host, an e-mail address, a phone number, a chat id. Each has one
canonical form, so "the person named it" is an equality test and a look-alike is not equal: a
host in lower case, IDNA-encoded (a Cyrillic "а" shows as `xn--…`), without a trailing dot or a
leading `www.`; an e-mail address in lower case; a phone number as its digits; a chat id as its
digits with their sign, or an `@handle` in lower case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

EMAIL = re.compile(r"[^@\s<>()\[\],;:\"']+@[^@\s<>()\[\],;:\"']+\.[^@\s<>()\[\],;:\"'.]+")
SCHEME_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s<>\"']+")
BARE_HOST = re.compile(
    r"(?i)^(?:www\.)?(?:[^\W_](?:[\w-]*[^\W_])?\.)+[^\W\d_][\w-]*[^\W_](?::\d+)?(?:[/?#]\S*)?$"
)
DOMAIN_IN_TEXT = re.compile(r"(?:[^\W_](?:[\w-]*[^\W_])?\.)+[^\W\d_][\w-]*[^\W_]")
HANDLE = re.compile(r"^@[A-Za-z][A-Za-z0-9_]{3,}$")
HANDLE_IN_TEXT = re.compile(r"(?<![\w@])@[A-Za-z][A-Za-z0-9_]{3,}")
CHAT_NUMBER = re.compile(r"^-?\d{5,}$")
PHONE = re.compile(r"^\+?[\d\s().-]{7,}$")
NUMBER_IN_TEXT = re.compile(r"(?<![\w+-])[+-]?\d[\d\s().-]{3,}\d")


class AddressKind(StrEnum):
    HOST = "host"
    EMAIL = "e-mail address"
    PHONE = "phone number"
    CHAT = "chat id"


@dataclass(frozen=True, slots=True, order=True)
class Address:
    kind: AddressKind
    value: str  # canonical


def canonical_host(host: str) -> str | None:
    text = host.strip().rstrip(".").lower()
    if not text:
        return None
    try:
        text = text.encode("idna").decode("ascii")
    except UnicodeError:
        # Not a name IDNA accepts: keep it as it is, escaped, so it can't equal a real one.
        text = text.encode("ascii", "backslashreplace").decode("ascii")
    return text.removeprefix("www.") or None


def _host_of(url: str) -> Address | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    canonical = canonical_host(host) if host else None
    return Address(AddressKind.HOST, canonical) if canonical else None


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def address_of(value: str) -> Address | None:
    """The address a destination argument's value names, or None when Palui can't read one."""
    text = value.strip()
    lowered = text.lower()
    if lowered.startswith("mailto:"):
        text, lowered = text[7:].split("?", 1)[0], lowered[7:].split("?", 1)[0]
    elif lowered.startswith("tel:"):
        digits = _digits(text)
        return Address(AddressKind.PHONE, digits) if len(digits) >= 7 else None
    if SCHEME_URL.match(text):
        return _host_of(text)
    if email := EMAIL.search(text):
        return Address(AddressKind.EMAIL, email.group(0).lower())
    if BARE_HOST.match(text):
        return _host_of(f"http://{text}")
    if HANDLE.match(text):
        return Address(AddressKind.CHAT, lowered)
    if CHAT_NUMBER.match(text):
        return Address(AddressKind.CHAT, ("-" if text.startswith("-") else "") + _digits(text))
    if PHONE.match(text) and len(_digits(text)) >= 7:
        return Address(AddressKind.PHONE, _digits(text))
    return None


def addresses_in(text: str) -> frozenset[Address]:
    """Every address a person's message names, in canonical form."""
    found: set[Address] = set()
    for match in SCHEME_URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?)]}'\"")
        if (host := _host_of(url)) is not None:
            found.add(host)
    for match in EMAIL.finditer(text):
        found.add(Address(AddressKind.EMAIL, match.group(0).rstrip(".").lower()))
    for match in DOMAIN_IN_TEXT.finditer(text):
        if (name := canonical_host(match.group(0))) is not None:
            found.add(Address(AddressKind.HOST, name))
    for match in HANDLE_IN_TEXT.finditer(text):
        found.add(Address(AddressKind.CHAT, match.group(0).lower()))
    for match in NUMBER_IN_TEXT.finditer(text):
        number = match.group(0)
        digits = _digits(number)
        if len(digits) >= 5 and re.fullmatch(r"-?\d+", number):
            found.add(Address(AddressKind.CHAT, ("-" if number[0] == "-" else "") + digits))
        if len(digits) >= 7:
            found.add(Address(AddressKind.PHONE, digits))
    return frozenset(found)
