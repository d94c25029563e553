"""Is a delivery the sender's? Checked in constant time, before anything is stored.

A sender authenticates with `X-Palui-Secret: <secret>` or with `X-Palui-Timestamp` +
`X-Palui-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">` within ±5 minutes.
A signed delivery is accepted once: its signature is its replay key, stored with it (unique per
webhook), so a replay inside the window is refused by the database, in every process. A header
that is not exactly of its form is refused like a wrong secret, never parsed further.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

from palui.webhooks.specs import WebhookSpec

MAX_SKEW_S = 300
# Unix seconds in ASCII digits: `int()` would also take "²", "٣" or "1_000", and 5,000 digits
# make it raise; twelve digits reach the year 33,000.
TIMESTAMP_RE = re.compile(r"[0-9]{1,12}")
SIGNATURE_RE = re.compile(r"sha256=[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Authentication:
    """The verdict on one request: `refusal` says why not (for the audit log, never a secret);
    `replay_key` is set for a signed delivery (the signature, in its one spelling)."""

    refusal: str | None
    replay_key: str | None = None

    @property
    def ok(self) -> bool:
        return self.refusal is None


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Palui-Signature` value a sender computes."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


def same_secret(given: str, expected: str) -> bool:
    """Constant-time comparison of a header's value (aiohttp hands non-UTF-8 bytes over as
    surrogates, which `surrogateescape` turns back into the bytes that were sent)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())


def authenticate(
    spec: WebhookSpec, headers: Mapping[str, str], body: bytes, now: float
) -> Authentication:
    given_signature = headers.get("X-Palui-Signature")
    if given_signature is not None:
        return _signed(spec, given_signature, headers.get("X-Palui-Timestamp"), body, now)
    given_secret = headers.get("X-Palui-Secret")
    if given_secret is None:
        return Authentication("no X-Palui-Secret or X-Palui-Signature")
    if not same_secret(given_secret, spec.secret):
        return Authentication("wrong secret")
    return Authentication(None)


def _signed(
    spec: WebhookSpec, given: str, timestamp: str | None, body: bytes, now: float
) -> Authentication:
    if timestamp is None:
        return Authentication("signature without X-Palui-Timestamp")
    if not TIMESTAMP_RE.fullmatch(timestamp):
        return Authentication("malformed X-Palui-Timestamp")
    if abs(now - int(timestamp)) > MAX_SKEW_S:
        return Authentication("stale timestamp")
    given = given.strip().lower()
    if not SIGNATURE_RE.fullmatch(given):
        return Authentication("malformed X-Palui-Signature")
    expected = signature(spec.secret, timestamp, body)
    if not hmac.compare_digest(given.encode(), expected.encode()):
        return Authentication("bad signature")
    return Authentication(None, replay_key=expected)
