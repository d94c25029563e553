"""A URL as a client reads it (the WHATWG URL standard), and whether clients disagree on it.

What a call reaches is what the client that makes it connects to, so Palui reads a URL the way
browsers and most HTTP libraries do: leading and trailing controls and spaces trimmed, tabs and
line breaks dropped, `\\` a path separator in the special schemes (http, https, ws, wss, ftp,
file), any number of slashes after a special scheme, the host after the last `@` of the
authority, a port only of digits. Some URLs read differently in a strict RFC 3986 parser
(`urllib.parse.urlsplit`): `http://evil.example\\@named.example/` goes to `evil.example` in a
browser and to `named.example` in urllib. Such a URL, or one with a user name before its host, is
ambiguous: a call that uses one asks first, whatever host it seems to name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from palui.policy.hosts import canonical_host

C0_OR_SPACE = "".join(map(chr, range(0x21)))
SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
SPECIAL = frozenset({"ftp", "file", "http", "https", "ws", "wss"})
_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")
LINE_BREAK = "it has a tab or line break inside"


@dataclass(frozen=True, slots=True)
class UrlReading:
    """Where a client given the URL goes: its canonical host (None: a host the client would
    refuse, so where it goes can't be told), and why clients could read it otherwise."""

    host: str | None
    ambiguous: str | None = None


def _split_port(hostport: str) -> tuple[str, str | None]:
    """The host and the port of an authority without its user part (port None: not a port)."""
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            return hostport, ""
        host, rest = hostport[: close + 1], hostport[close + 1 :]
        if rest and not rest.startswith(":"):
            return host, None
        return host, rest[1:]
    host, _, port = hostport.partition(":")
    return host, port


def _strict_host(text: str) -> str | None:
    try:
        host = urlsplit(text).hostname
    except ValueError:
        return None
    if not host:
        return None
    return canonical_host(f"[{host}]" if ":" in host else host)


def read_url(text: str) -> UrlReading | None:
    """How a client reads `text` as a URL; None when it is no URL with a host (no scheme, an
    opaque one such as `mailto:` or `tel:`, or a local `file:` path)."""
    trimmed = text.strip(C0_OR_SPACE)
    cleaned = _TAB_OR_NEWLINE.sub("", trimmed)
    match = SCHEME.match(cleaned)
    if not match:
        return None
    scheme, rest = match.group(1).lower(), cleaned[match.end() :]
    if scheme in SPECIAL:
        slashes = len(rest) - len(rest.lstrip("/\\"))
        if scheme == "file":
            if slashes < 2:
                return None
            slashes = 2  # `file:///path`: an empty host, the rest is the path
        separators = "/\\?#"
    elif rest.startswith("//"):
        slashes, separators = 2, "/?#"
    else:
        return None
    after = rest[slashes:]
    end = next((i for i, ch in enumerate(after) if ch in separators), len(after))
    authority = after[:end]
    _, at, hostport = authority.rpartition("@")  # the user part is never the host
    host_text, port = _split_port(hostport)
    if scheme == "file" and host_text.lower() in ("", "localhost"):
        return None
    readable = port is not None and (port == "" or (port.isascii() and port.isdigit()))
    if readable and port and int(port) > 65535:
        readable = False
    host = canonical_host(host_text) if readable and host_text else None
    return UrlReading(host, _ambiguity(trimmed, rest[: slashes + end + 1], at, host))


def _ambiguity(trimmed: str, head: str, at: str, host: str | None) -> str | None:
    """Why clients could read the URL as going somewhere other than `host`, or None."""
    if at:
        return "it has a user name before its host"
    if "\\" in head:
        return "it has a backslash before or right after its host"
    if _TAB_OR_NEWLINE.search(trimmed):
        return LINE_BREAK
    if host is not None and _strict_host(trimmed) != host:
        return "clients read its host differently"
    return None
