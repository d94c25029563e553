"""Is a delivery the sender's? Checked in constant time, before anything is stored.

A sender authenticates with `X-Palui-Secret: <secret>` or with `X-Palui-Timestamp` +
`X-Palui-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">` within ±5 minutes.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from palui.webhooks.specs import WebhookSpec

MAX_SKEW_S = 300


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Palui-Signature` value a sender computes."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


def authenticate(
    spec: WebhookSpec, headers: Mapping[str, str], body: bytes, now: float
) -> str | None:
    """None when the request is the sender's; else why not (for the audit log, never a secret)."""
    given_signature = headers.get("X-Palui-Signature")
    if given_signature is not None:
        timestamp = headers.get("X-Palui-Timestamp", "")
        if not timestamp.isdigit():
            return "signature without a valid X-Palui-Timestamp"
        if abs(now - int(timestamp)) > MAX_SKEW_S:
            return "stale timestamp"
        expected = signature(spec.secret, timestamp, body)
        if not hmac.compare_digest(given_signature.strip().lower().encode(), expected.encode()):
            return "bad signature"
        return None
    given_secret = headers.get("X-Palui-Secret")
    if given_secret is None:
        return "no X-Palui-Secret or X-Palui-Signature"
    if not hmac.compare_digest(given_secret.encode(), spec.secret.encode()):
        return "wrong secret"
    return None
