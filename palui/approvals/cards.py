"""How an approval card reads: the call, why it waits, its arguments, and how it ended.

No value can fake a line of the card: each argument is one `key: value` line, and a value that
holds a line break, another invisible or control character, a run of spaces (which could push
text onto a line of its own) or something that reads like `key: value` is shown quoted, with
those characters escaped (`"hi\nto: boss@corp"`). Lines the tool or the model wrote (the
description, the why) are shown the same way where they are not plain.

Also the note the model reads first when a person edited a call's arguments before approving it,
so it keeps their values.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from palui import callbacks
from palui.callbacks import ApprovalAction
from palui.domain import ApprovalRecord, ApprovalStatus, Button, Card
from palui.tools.digest import canonical

ARG_VALUE_CHARS = 300
ARG_TOTAL_CHARS = 1500
OFF_SITE_LINE = "🌐 off-site: it reaches beyond its own server's application"


_SPACES = re.compile(r" {3,}")
_LOOKS_LIKE_A_LINE = re.compile(r"\S:\s")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def visible(text: str) -> str:
    """`text` with every character that is not plainly visible escaped (line breaks, control
    and format characters such as bidi overrides) and long runs of spaces counted."""
    escaped = "".join(ch if ch.isprintable() else json.dumps(ch)[1:-1] for ch in text)
    return _SPACES.sub(lambda run: f" [{len(run.group(0))} spaces] ", escaped)


def _plain(text: str) -> bool:
    return (
        text.isprintable()
        and not _SPACES.search(text)
        and not _LOOKS_LIKE_A_LINE.search(text)
        and not text.startswith('"')
    )


def shown_value(value: Any) -> str:
    """One argument's value on one line: plain text as it is, anything else quoted and escaped."""
    if isinstance(value, str):
        return value if value and _plain(value) else visible(json.dumps(value, ensure_ascii=False))
    return visible(json.dumps(value, ensure_ascii=False))


def _shown_key(key: str) -> str:
    return key if _PLAIN_KEY.fullmatch(key) else visible(json.dumps(key, ensure_ascii=False))


def render_arguments(arguments: str, *, full: bool = False) -> tuple[str, bool]:
    """One `key: value` line per argument; long values and long lists are cut unless `full`."""
    try:
        data = json.loads(arguments)
    except json.JSONDecodeError:
        data = {"(raw)": arguments}
    if not isinstance(data, dict):
        data = {"(raw)": data}
    if not data:
        return "  (none)", False
    lines, cut = [], False
    for key, value in data.items():
        text = shown_value(value)
        if not full and len(text) > ARG_VALUE_CHARS:
            text, cut = text[:ARG_VALUE_CHARS] + " …", True
        lines.append(f"  {_shown_key(str(key))}: {text}")
    body = "\n".join(lines)
    if not full and len(body) > ARG_TOTAL_CHARS:
        body, cut = body[:ARG_TOTAL_CHARS] + " …", True
    return body, cut


def changed_arguments(model_arguments: str | None, arguments: str) -> list[tuple[str, Any, Any]]:
    """(name, model's value, person's value) of each argument a person edited; absent = None."""
    if model_arguments is None:
        return []
    before, after = json.loads(model_arguments), json.loads(arguments)
    return [
        (name, before.get(name), after.get(name))
        for name in sorted(before.keys() | after.keys())
        if canonical({"v": before.get(name)}) != canonical({"v": after.get(name)})
    ]


def _short(value: Any, limit: int = 60) -> str:
    text = "(not set)" if value is None else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def edited_line(record: ApprovalRecord) -> str | None:
    """The card's line saying who changed which arguments (None when nobody edited it)."""
    if record.model_arguments is None:
        return None
    changes = ", ".join(
        f"{name} (was {_short(old)})"
        for name, old, _ in changed_arguments(record.model_arguments, record.arguments)
    )
    return visible(f"✏️ Edited by {record.edited_by}: {changes or 'no change'}")


def edited_note(model_arguments: str, arguments: str) -> str:
    """What the model reads first in an edited call's result."""
    changes = "; ".join(
        f"{name}: you sent {_short(old, 200)}, they set {_short(new, 200)}"
        for name, old, new in changed_arguments(model_arguments, arguments)
    )
    return (
        "The person edited this call's arguments before approving it, and it ran with their "
        f"values ({changes}). Keep their values; don't change them back.\nResult:\n"
    )


def expires_in(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    if hours >= 1:
        return f"{hours:.0f} h"
    return f"{max(int(delta.total_seconds() // 60), 1)} min"


def _summary(description: str) -> str:
    first = description.strip().split("\n", 1)[0]
    return visible(first[:200])


def outcome_line(record: ApprovalRecord) -> str:
    """The line a decided card ends with."""
    where = " on the web" if record.decided_on == "web" else ""
    if record.status == ApprovalStatus.DENIED:
        return f"❌ Denied{where} by {record.decided_by} — nothing was run"
    if record.status == ApprovalStatus.EXPIRED:
        return "⌛ Expired — nothing was run"
    at = record.decided_at.strftime("%H:%M") if record.decided_at else "?"
    return f"✅ Approved{where} by {record.decided_by} at {at} UTC"


def card(
    record: ApprovalRecord,
    description: str,
    *,
    now: datetime,
    full: bool = False,
    off_site: bool = False,
) -> Card:
    """The card a person decides on. `off_site`: the tool reaches beyond its server's own
    application (openWorldHint true or unset); a badge only, it changes no question."""
    label = record.tool_class + (" · sends out" if record.sends_out else "")
    arguments, cut = render_arguments(record.arguments, full=full)
    lines = [f"🔐 Approval needed — {record.tool}  ({label})"]
    if off_site:
        lines.append(OFF_SITE_LINE)
    if description:
        lines.append(_summary(description))
    lines.append(f"Why: {visible(record.why)}.")
    if edited := edited_line(record):
        lines.append(edited)
    lines += ["Arguments", arguments]
    lines.append(f"Expires in {expires_in(record.expires_at - now)}.")
    approve, deny = ApprovalAction.APPROVE, ApprovalAction.DENY
    decide = (
        Button("✅ Approve", callbacks.approval(record.token, approve)),
        Button("❌ Deny", callbacks.approval(record.token, deny)),
    )
    more = [Button("✏️ Edit", callbacks.card_edit(record.token))]  # palui.approvals.edits
    if cut:
        show_all = callbacks.approval(record.token, ApprovalAction.SHOW_ALL)
        more.append(Button("📄 Show all arguments", show_all))
    return Card("\n".join(lines), rows=(decide, tuple(more)))


def closed_card(record: ApprovalRecord, outcome: str) -> Card:
    """A decided card: no buttons, its outcome last."""
    label = record.tool_class + (" · sends out" if record.sends_out else "")
    arguments, _ = render_arguments(record.arguments)
    edited = f"{edited_line(record)}\n" if record.model_arguments else ""
    return Card(f"🔐 {record.tool}  ({label})\n{edited}{arguments}\n{outcome}")
