"""A host as an HTTP client resolves it: the WHATWG URL standard's host parser, with UTS-46.

Browsers, curl's WHATWG mode, Node and most libraries that fetch a URL parse its host this way,
so Palui does too: a host is percent-decoded, mapped with UTS-46 (IDNA 2008, non-transitional:
`faß.de` is `xn--fa-hia.de`, not `fass.de`), checked for code points no domain may hold, and a
host that ends in a number is an IPv4 address in any of its forms (`2130706433`, `0x7f.1`,
`0177.0.0.1` are all `127.0.0.1`). `None` means the client would refuse the host: Palui can't
tell where such a call goes.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote_to_bytes

import idna

from palui.policy.lexicon import word_set

# The WHATWG "forbidden domain code points": a host holding one is not a domain.
_FORBIDDEN = frozenset("\x00\t\n\r #/:<>?@[\\]^|%\x7f") | frozenset(map(chr, range(0x20)))
_HEX = re.compile(r"^0[xX][0-9A-Fa-f]*$")
_LABEL = re.compile(r"^[^\W_](?:[\w-]*[^\W_])?$")
# Names that are files far more often than hosts, though some are TLDs too (`.md`, `.py`, `.sh`).
_FILE_ENDINGS = word_set(
    "md py sh rs pl pm rb js ts jsx tsx mjs cjs go c h cc cpp hpp cs java kt swift php lua r "
    "txt log csv tsv json jsonl yaml yml toml ini cfg conf env lock xml html htm css scss svg "
    "pdf doc docx xls xlsx ppt pptx odt ods rtf epub png jpg jpeg gif webp bmp ico tif tiff "
    "heic mp3 mp4 m4a wav ogg oga opus flac mov avi mkv webm zip tar gz tgz bz2 xz zst rar "
    "7z exe bin dll so dylib deb rpm apk dmg iso img db sqlite sql bak tmp old orig swp ipynb "
    "sample mdx rst tex bib ics vcf eml msg key pem crt csr p12 pub"
)


def _ipv4_number(part: str) -> int | None:
    radix, digits = 10, part
    if _HEX.match(part):
        radix, digits = 16, part[2:]
    elif len(part) >= 2 and part.startswith("0"):
        radix, digits = 8, part[1:]
    if not digits:
        return 0
    try:
        return int(digits, radix) if digits.isascii() and digits.isalnum() else None
    except ValueError:
        return None


def _ends_in_number(host: str) -> bool:
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    last = parts[-1]
    return (last != "" and last.isascii() and last.isdigit()) or bool(_HEX.match(last))


def _ipv4(host: str) -> str | None:
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4 or "" in parts:
        return None
    numbers = [_ipv4_number(part) for part in parts]
    if any(number is None for number in numbers):
        return None
    known = [number for number in numbers if number is not None]
    if any(number > 255 for number in known[:-1]) or known[-1] >= 256 ** (5 - len(known)):
        return None
    value = known[-1] + sum(number * 256 ** (3 - i) for i, number in enumerate(known[:-1]))
    return str(ipaddress.IPv4Address(value))


def _to_ascii(domain: str) -> str | None:
    """UTS-46 ToASCII as WHATWG asks for it (non-transitional, no STD3 rules)."""
    labels = domain.split(".")
    if domain.isascii() and not any(label.lower().startswith("xn--") for label in labels):
        return domain.lower()  # WHATWG's fast path: plain ASCII is only lower-cased
    trailing = "." if domain.endswith(".") else ""
    try:
        encoded = idna.encode(domain.rstrip("."), uts46=True, transitional=False)
    except (idna.IDNAError, UnicodeError, ValueError):
        return None
    return encoded.decode("ascii") + trailing


def client_host(raw: str) -> str | None:
    """The host a WHATWG client reads from a URL's host part, or None if it would refuse it."""
    if raw.startswith("["):
        if not raw.endswith("]"):
            return None
        try:
            return f"[{ipaddress.IPv6Address(raw[1:-1]).compressed}]"
        except ValueError:
            return None
    domain = unquote_to_bytes(raw).decode("utf-8", errors="replace")
    ascii_host = _to_ascii(domain) if domain else None
    if not ascii_host or any(ch in _FORBIDDEN for ch in ascii_host):
        return None
    return _ipv4(ascii_host) if _ends_in_number(ascii_host) else ascii_host


def canonical_host(raw: str) -> str | None:
    """A host as Palui compares it: the client's host without its trailing dot or a leading
    `www.` (the person who names `example.org` names `www.example.org` too)."""
    host = client_host(raw.strip())
    if host is None:
        return None
    return host.rstrip(".").removeprefix("www.") or None


def canonical_label(label: str) -> str | None:
    """One label of a host as `canonical_host` writes it (for a glob such as `*.faß.de`)."""
    return _to_ascii(label) if label else None


def looks_like_host(name: str) -> bool:
    """Whether a bare name reads as a host someone would send to: dotted labels of letters,
    digits and hyphens, ending in an alphabetic label (a TLD's shape) that is not a common file
    ending. `evil.example`, `x.co` and `münchen.de` are hosts; `notes.md`, `1.2.3` are not."""
    labels = name.rstrip(".").split(".")
    if len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        return False
    tld = labels[-1].lower()
    alphabetic = tld.isalpha() or (tld.startswith("xn--") and len(tld) > 4)
    return alphabetic and len(tld) >= 2 and tld not in _FILE_ENDINGS
