"""Words a reply shows once and the database keeps only until then: a sign-in link's token.

A reply must be stored before it is sent (a crash between the two may not lose it), so such a
secret is in the outbox row for as long as the reply is undelivered. It is marked there by two
Unicode noncharacters (which no text a person or a model means carries); the sender sends the
text without the marks (`unsealed`) and, in the same write that records the reply as delivered,
keeps it with every sealed span replaced (`spent`): a copy of the database taken afterwards
holds no usable token.
"""

from __future__ import annotations

import re

OPEN = "\ufdd0"
CLOSE = "\ufdd1"
SPENT = "(sent once, not kept)"
_SPAN = re.compile(f"{OPEN}[^{CLOSE}]*{CLOSE}")


def sealed(secret: str) -> str:
    """`secret` marked to be shown once and then forgotten."""
    return f"{OPEN}{secret}{CLOSE}"


def unsealed(text: str) -> str:
    """The text as it is sent: the secrets in it, unmarked."""
    return text.replace(OPEN, "").replace(CLOSE, "")


def spent(text: str) -> str | None:
    """The text as it is kept once delivered, or None when it holds no secret."""
    if OPEN not in text and CLOSE not in text:
        return None
    return unsealed(_SPAN.sub(SPENT, text))
