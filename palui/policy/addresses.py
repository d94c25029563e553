"""Addresses: where a value sends to, and the ones a person's own words name, compared as equals.

Four kinds (DESIGN §1.4): a URL's host, an e-mail address, a phone number, a chat id. Each has one
canonical form, so "the person named it" is an equality test and a look-alike is not equal: a
host as a client resolves it (`palui.policy.hosts`: UTS-46, so a Cyrillic "а" shows as `xn--…`
and `faß.de` is not `fass.de`), without a trailing dot or a leading `www.`; an e-mail address in
lower case with its domain canonical the same way; a phone number as its digits; a chat id as its
digits with their sign, or an `@handle` in lower case. A URL is read as a client reads it
(`palui.policy.urls`); one that clients could read differently is kept aside as ambiguous.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote

from palui.policy.hosts import canonical_host, looks_like_host
from palui.policy.urls import C0_OR_SPACE, LINE_BREAK, UrlReading, read_url

# Written so each finds its matches in one pass (a lookbehind picks where a match may start, a
# possessive run never backtracks): arguments are untrusted and may be long.
URL_IN_TEXT = re.compile(
    r"(?i)(?:(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+://|\b(?:https?|wss?|ftp|file):)[^\s<>\"]+"
)
MAILTO = re.compile(r"(?i)\bmailto:[^\s<>\"']+")
EMAIL = re.compile(r"(?<![^@\s<>()\[\],;:\"'/\\])[^@\s<>()\[\],;:\"'/\\]++@((?:[\w-]++\.)+[\w-]++)")
URL_START = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s:]")  # a value that begins as a URL
NAME_ADDR = re.compile(r"<[^<>\s]*(?:@|://)[^<>\s]*>")  # "Ana <ana@example.org>"
BARE = re.compile(r"^(?P<host>[^\s/\\?#:@\[\]]+)(?P<rest>(?::\d+)?(?:[/\\?#]\S*)?)$")
IPV4_SHAPE = re.compile(r"^\d+(?:\.\d+){3}$")
DOMAIN_IN_TEXT = re.compile(r"(?<![\w.-])(?:[\w-]++\.)+[^\W\d_][\w-]*+")
HANDLE = re.compile(r"^@[A-Za-z][A-Za-z0-9_]{3,}$")
HANDLE_IN_TEXT = re.compile(r"(?<![\w@])@[A-Za-z][A-Za-z0-9_]{3,}")
CHAT_NUMBER = re.compile(r"^-?\d{5,}$")
PHONE = re.compile(r"^\+?[\d\s().-]{7,}$")
NUMBER_IN_TEXT = re.compile(r"(?<![\w+-])[+-]?\d[\d\s().-]{3,}\d")
# UTS-46 maps these to "." in a host, so `evil。example` is `evil.example` to a client.
FULL_STOPS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
TRAILING = ".,;:!?)]}'\""
SHOWN_CONTROLS = str.maketrans({"\t": "\\t", "\n": "\\n", "\r": "\\r"})
WRAPPING = "<>()[]{}\"'`"


class AddressKind(StrEnum):
    HOST = "host"
    EMAIL = "e-mail address"
    PHONE = "phone number"
    CHAT = "chat id"


@dataclass(frozen=True, slots=True, order=True)
class Address:
    kind: AddressKind
    value: str  # canonical


@dataclass(frozen=True, slots=True)
class Reading:
    """What one value says about where it goes."""

    addresses: tuple[Address, ...] = ()
    ambiguous: tuple[str, ...] = ()  # "<url> (<why>)": URLs clients could read differently
    unreadable: bool = False  # a URL or address whose host Palui (and a client) can't read
    said: tuple[str, ...] = ()  # what it holds, in words: "a URL", "an e-mail address", ...

    def __bool__(self) -> bool:
        return bool(self.addresses or self.ambiguous or self.unreadable)


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def _number(piece: str) -> Address | None:
    text = piece.strip().removeprefix("tel:")
    if HANDLE.match(text):
        return Address(AddressKind.CHAT, text.lower())
    if CHAT_NUMBER.match(text):
        return Address(AddressKind.CHAT, ("-" if text.startswith("-") else "") + _digits(text))
    if PHONE.match(text) and len(_digits(text)) >= 7:
        return Address(AddressKind.PHONE, _digits(text))
    return None


def _email(local: str, domain: str) -> Address | None:
    host = canonical_host(domain)
    return Address(AddressKind.EMAIL, f"{local.lower()}@{host}") if host else None


def scan(value: str, *, numbers: bool) -> tuple[Reading, str]:
    """Every address in `value` (URLs, e-mail addresses, bare hosts; with `numbers`, phone
    numbers and chat ids too) and the text left once they are taken out."""
    text = value.translate(FULL_STOPS)
    found: list[Address] = []
    ambiguous: list[str] = []
    said: list[str] = []
    unreadable = False

    def note(reading: UrlReading, shown: str, kind: str) -> None:
        nonlocal unreadable
        if reading.host is None:
            unreadable = True
        elif (address := Address(AddressKind.HOST, reading.host)) not in found:
            found.append(address)
        entry = f"{shown[:80].translate(SHOWN_CONTROLS)} ({reading.ambiguous})"
        if reading.ambiguous and entry not in ambiguous:
            ambiguous.append(entry)
        said.append(kind)

    def url(match: re.Match[str]) -> str:
        shown = match.group(0).rstrip(TRAILING)
        if (reading := read_url(shown)) is None:
            return match.group(0)  # a local file, say: no destination
        note(reading, shown, "a URL")
        return " " + match.group(0)[len(shown) :]

    def mailto(match: re.Match[str]) -> str:
        # Every recipient of a `mailto:` (its path and its `to=`/`cc=`/`bcc=` fields).
        for recipient in EMAIL.finditer(re.sub(r"[?&=]", " ", unquote(match.group(0)))):
            email(recipient)
        return " "

    def email(match: re.Match[str]) -> str:
        nonlocal unreadable
        if not match.group(1).rsplit(".", 1)[-1][:1].isalpha():
            return match.group(0)  # `lodash@4.17.21`: a version, not a mailbox
        local = match.group(0)[: -len(match.group(1)) - 1]
        address = _email(local, match.group(1))
        if address is None:
            unreadable = True
        elif address not in found:
            found.append(address)
        said.append("an e-mail address")
        return " "

    def host(token: str) -> str:
        # `@` too: `https://named.example<@evil.example/` in prose leaves `<@evil.example/`.
        core = token.strip(WRAPPING + "@").rstrip(TRAILING).lstrip(".")
        if core[:2] in ("//", "\\\\", "/\\", "\\/"):
            core = core.lstrip("/\\")  # `//evil.example/x`: relative to a scheme, still a host
        bare = BARE.match(core)
        if bare is None:
            return token
        name, rest = bare.group("host"), bare.group("rest")
        if not (looks_like_host(name) or (rest and IPV4_SHAPE.match(name))):
            return token
        reading = read_url(f"http://{bare.group(0)}")
        note(reading or UrlReading(None), bare.group(0), "a host name")
        return ""

    text = URL_IN_TEXT.sub(url, text)
    text = MAILTO.sub(mailto, text)
    text = EMAIL.sub(email, text)
    text = " ".join(host(token) for token in re.split(r"[\s,;]+", text))
    whole = value.translate(FULL_STOPS).strip(C0_OR_SPACE)
    if URL_START.match(re.sub(r"[\t\n\r]", "", whole)) and (as_one := read_url(whole)):
        # The whole value as one URL, as a client handed this value reads it (tabs and line
        # breaks dropped): a host its pieces don't show is one more destination.
        # A list of URLs one a line reads whole as its first URL: nothing more to say then.
        known = {address.value for address in found}
        if as_one.host not in known or as_one.ambiguous not in (None, LINE_BREAK):
            note(as_one, whole, "a URL")
    if numbers:
        for piece in re.split(r"[,;]", text):
            if (address := _number(piece)) is None:
                continue
            if address not in found:
                found.append(address)
            said.append(f"a {address.kind.value}")
            text = text.replace(piece, " ", 1)
    reading = Reading(tuple(found), tuple(ambiguous), unreadable, tuple(dict.fromkeys(said)))
    return reading, text


def read_destination(value: str) -> Reading:
    """Every address a destination argument's value holds (a list, "Name <a@b>", free text)."""
    return scan(value, numbers=True)[0]


def read_bare(value: str) -> Reading | None:
    """The addresses of a value that is nothing but addresses (a URL, a host, an e-mail address,
    a list of them, "Name <a@b>"), whatever its argument is called; None for any other value."""
    reading, rest = scan(value, numbers=False)
    if not reading:
        return None
    whole = value.strip(C0_OR_SPACE)
    if (URL_START.match(whole) and read_url(whole) is not None) or NAME_ADDR.search(value):
        return reading
    return reading if not rest.strip(" ,;" + WRAPPING) else None


def address_of(value: str) -> Address | None:
    """The first address a destination argument's value names, or None."""
    addresses = read_destination(value.strip()).addresses
    return addresses[0] if addresses else None


def addresses_in(text: str) -> frozenset[Address]:
    """Every address a person's message names, in canonical form."""
    text = text.translate(FULL_STOPS)
    found: set[Address] = set()
    for match in URL_IN_TEXT.finditer(text):
        reading = read_url(match.group(0).rstrip(TRAILING))
        if reading is not None and reading.host is not None:
            found.add(Address(AddressKind.HOST, reading.host))
    for match in EMAIL.finditer(text):
        local = match.group(0)[: -len(match.group(1)) - 1]
        if (email := _email(local, match.group(1))) is not None:
            found.add(email)
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
