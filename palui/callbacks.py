"""Every callback format Palui puts in an inline button, built and parsed in one place.

    ap:<card token>:y | n | all        an approval card's Approve, Deny, Show all arguments
    ap:<card token>:e                  the card's ✏️ Edit (the edit flow's, not a decision)
    ae:<edit token>:k | r:<seq>        an edit question's Keep / Keep the rest
    ae:<edit token>:c                  an edit question's Cancel
    cx:<op>:<key>                      the connector sheet (`/connectors`)
    jb:<op>:<job token>                the job sheet (`/jobs`)
    sk:<op>:<digest prefix>            the skills sheet (`/skills`): `t` trusts what was shown
    el:<question token>:<n> | d | c    a server's question: the n-th choice, Decline, Cancel
    el:<question token>:y              a server's page to open: ✅ Done
    md:<model key>                     `/model`: choose that model (a digest of its name)

The wire format is kept exactly: cards already posted in a chat must still work after an
upgrade. Telegram allows 64 bytes of callback data; a builder refuses anything longer.

This is a kernel module (it imports nothing of Palui's but the standard library) rather than a
part of `palui.interact`: the approval cards, the sheets and the console channel build or read
buttons too, and they sit below `interact` in the layers. `parse` returns one typed value per
format, so a handler claims a tap by its type and no check depends on running first.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

MAX_BYTES = 64  # Telegram's limit on a button's callback data

APPROVAL = "ap"
EDIT_QUESTION = "ae"
CONNECTOR = "cx"
JOB = "jb"
SKILL = "sk"
QUESTION = "el"
MODEL = "md"
EDIT = "e"  # the action of an approval card's ✏️ Edit button


class ApprovalAction(StrEnum):
    APPROVE = "y"
    DENY = "n"
    SHOW_ALL = "all"


class EditAction(StrEnum):
    KEEP = "k"
    KEEP_REST = "r"
    CANCEL = "c"


@dataclass(frozen=True, slots=True)
class ApprovalButton:
    """A decision (or Show all arguments) on an approval card."""

    token: str
    action: ApprovalAction


@dataclass(frozen=True, slots=True)
class CardEditButton:
    """✏️ Edit on an approval card: starts the edit flow."""

    token: str


@dataclass(frozen=True, slots=True)
class EditQuestionButton:
    """Keep, Keep the rest or Cancel on an edit question. `seq` names the question it was drawn
    for (None when absent or unreadable: the flow then treats it as an earlier question's)."""

    token: str
    action: EditAction
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class ConnectorButton:
    op: str
    key: str


@dataclass(frozen=True, slots=True)
class JobButton:
    op: str
    token: str


@dataclass(frozen=True, slots=True)
class SkillButton:
    op: str
    key: str  # the first 16 hex digits of the skill's digest as its card showed it


@dataclass(frozen=True, slots=True)
class QuestionButton:
    """An answer to an MCP server's question (elicitation): a choice's index, "d" or "c", or
    "y" (a page to open is done)."""

    token: str
    choice: str


@dataclass(frozen=True, slots=True)
class ModelButton:
    """A model on the `/model` card, by `model_key` of its name: only a name on the operator's
    list resolves, so forged data chooses nothing."""

    key: str


Callback = (
    ApprovalButton
    | CardEditButton
    | EditQuestionButton
    | ConnectorButton
    | JobButton
    | SkillButton
    | QuestionButton
    | ModelButton
)


def _checked(data: str) -> str:
    if len(data.encode()) > MAX_BYTES:
        raise ValueError(f"callback data over {MAX_BYTES} bytes: {data[:20]}…")
    return data


def approval(token: str, action: ApprovalAction) -> str:
    return _checked(f"{APPROVAL}:{token}:{action}")


def card_edit(token: str) -> str:
    return _checked(f"{APPROVAL}:{token}:{EDIT}")


def edit_question(token: str, action: EditAction, seq: int | None = None) -> str:
    tail = "" if seq is None else f":{seq}"
    return _checked(f"{EDIT_QUESTION}:{token}:{action}{tail}")


def connector(op: str, key: str) -> str:
    return _checked(f"{CONNECTOR}:{op}:{key}")


def job(op: str, token: str) -> str:
    return _checked(f"{JOB}:{op}:{token}")


def skill(op: str, key: str) -> str:
    return _checked(f"{SKILL}:{op}:{key}")


def question(token: str, choice: str) -> str:
    return _checked(f"{QUESTION}:{token}:{choice}")


def model_key(name: str) -> str:
    """A model name's key in a button: short whatever the name's length, and without `:`."""
    return hashlib.sha256(name.encode()).hexdigest()[:16]


def model(name: str) -> str:
    return _checked(f"{MODEL}:{model_key(name)}")


def parse(data: str | None) -> Callback | None:
    """The button a callback's data names; None for data that is none of Palui's formats."""
    parts = (data or "").split(":")
    kind = parts[0]
    if kind == APPROVAL and len(parts) == 3:
        if parts[2] == EDIT:
            return CardEditButton(parts[1])
        if parts[2] in tuple(ApprovalAction):
            return ApprovalButton(parts[1], ApprovalAction(parts[2]))
        return None
    if kind == EDIT_QUESTION and len(parts) in (3, 4) and parts[2] in tuple(EditAction):
        seq = parts[3] if len(parts) == 4 else ""
        return EditQuestionButton(
            parts[1], EditAction(parts[2]), int(seq) if seq.isdecimal() else None
        )
    if kind == CONNECTOR and len(parts) == 3:
        return ConnectorButton(parts[1], parts[2])
    if kind == JOB and len(parts) == 3:
        return JobButton(parts[1], parts[2])
    if kind == SKILL and len(parts) == 3:
        return SkillButton(parts[1], parts[2])
    if (
        kind == QUESTION
        and len(parts) == 3
        and (parts[2] in {"d", "c", "y"} or parts[2].isdecimal())
    ):
        return QuestionButton(parts[1], parts[2])
    if kind == MODEL and len(parts) == 2 and parts[1]:
        return ModelButton(parts[1])
    return None
