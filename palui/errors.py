"""Every error Palui raises on purpose, with a message a person can act on.

PaluiError
├── ConfigError          a setting is missing or invalid (names the key, the source, the fix)
├── DatabaseError        the database can't be reached or is not migrated
├── ModelError           the model call failed
│   └── ModelUnavailable every configured model (primary and fallbacks) was unreachable
├── ChannelError         the chat channel refused or failed a request (`permanent`: never retry)
│   ├── PermanentChannelError  the channel will never accept it (bot blocked, message gone)
│   ├── MessageNotModified     an edit found the message showing this already: done
│   ├── MarkupRejected         formatted text the channel could not parse
│   ├── DraftRefused           the channel will not show a draft in this chat
│   └── FileTooLarge           a file a person sent is past the download limit
├── LeaseLost            another process took over the chat's lease this work ran under
├── ScheduleError        a job's schedule can't be used (a ValueError too; the model reads it)
├── GuardRejected        the parameter guards refuse a call (the model or the editor is told)
├── HookFailed           an operator's hook raised, hung or answered nonsense
├── SignInRefused        a connector's sign-in could not start
├── AmbiguousRun         a turn id prefix fits more than one turn (a LookupError too)
└── Replayed             a webhook delivery with this replay key is already stored
    ConfigError
    └── AmbiguousName    a bare tool name in the kinds file that several connectors have

Errors a module raises and catches itself stay there (`palui.approvals.answers.BadValue`);
so does a private one (`_NotAllowed`).
"""

from __future__ import annotations

from collections.abc import Sequence


class PaluiError(Exception):
    """Base of every error Palui raises on purpose."""


class ConfigError(PaluiError):
    """A setting is missing or invalid. The message is one line: key, source, fix."""


class DatabaseError(PaluiError):
    """The database can't be reached or its schema is not what Palui needs."""


class ModelError(PaluiError):
    """A model call failed in a way the turn can report."""


class ModelUnavailable(ModelError):
    """No configured model could be reached; `attempts` lists (model, reason) for each."""

    def __init__(self, attempts: list[tuple[str, str]]) -> None:
        self.attempts = attempts
        tried = "; ".join(f"{model}: {reason}" for model, reason in attempts)
        super().__init__(f"the model could not be reached ({tried})")


class ChannelError(PaluiError):
    """The chat channel refused or failed a request.

    `permanent` is the one answer to "may this work later?": False (the default) leaves what
    was being sent pending for a retry; True drops it (or takes the other way, e.g. a preview
    that can't be edited is replaced by new messages). Set by the class, never read by name.
    `retry_after_s`: how long the channel asked to be left alone (Telegram's 429 `retry_after`),
    when it did: a retry waits exactly that."""

    permanent: bool = False

    def __init__(self, *args: object, retry_after_s: float | None = None) -> None:
        super().__init__(*args)
        self.retry_after_s = retry_after_s


class PermanentChannelError(ChannelError):
    """The channel will never accept this request (bot blocked, chat or message gone)."""

    permanent = True


class MessageNotModified(ChannelError):
    """An edit found the message already showing this text (Telegram's "message is not
    modified"); the edit counts as done."""


class MarkupRejected(ChannelError):
    """Formatted (HTML) text was refused because the channel could not parse it."""


class DraftRefused(ChannelError):
    """The channel will not show a draft in this chat (a group, an older Bot API): the answer
    falls back to an edited preview."""


class FileTooLarge(ChannelError):
    """A file is past the limit Palui may download (`[media] max_bytes`, Telegram's 20 MB)."""

    def __init__(self, size: int | None, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"the file is larger than {limit} bytes")


class LeaseLost(PaluiError):
    """Another process took over the lease (chat or delivery) this work runs under: its
    generation is no longer the lease's, so the write was refused and nothing more is done."""

    def __init__(self, chat_id: int, what: str = "chat") -> None:
        self.chat_id = chat_id
        super().__init__(f"the {what} lease of chat {chat_id} was taken over by another process")


class ScheduleError(PaluiError, ValueError):
    """A schedule that can't be used; the message says how to fix it (the model reads it)."""


class AmbiguousName(ConfigError):
    """A bare name in the kinds file that more than one connector's tool has."""

    def __init__(self, path: str, tool: str, holders: Sequence[str]) -> None:
        self.tool = tool
        self.candidates = tuple(f"{holder}__{tool}" for holder in sorted(holders))
        super().__init__(
            f"{path}: tool '{tool}': {len(holders)} connectors have it "
            f"({', '.join(self.candidates)}); name the one you mean in full"
        )


class SignInRefused(PaluiError):
    """The sign-in could not start; the message says why."""


class GuardRejected(PaluiError):
    """A call the guards refuse; `message` is what the model (or the person editing) sees."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class HookFailed(PaluiError):
    """A hook raised, hung or answered nonsense; `reason` is recorded and told to the model."""

    def __init__(self, hook: str, reason: str) -> None:
        super().__init__(f"hook {hook} {reason}")
        self.hook = hook
        self.reason = f"hook {hook} {reason}"


class AmbiguousRun(PaluiError, LookupError):
    """A turn id prefix that fits more than one turn."""

    def __init__(self, prefix: str, matches: list[str]) -> None:
        super().__init__(prefix)
        self.prefix = prefix
        self.matches = matches


class Replayed(PaluiError):
    """A delivery with this replay key is already stored: nothing was stored."""
