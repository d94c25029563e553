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
├── BudgetExceeded       a turn ran out of steps or time
└── LeaseLost            another process took over the chat's lease this work ran under
"""

from __future__ import annotations


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
    that can't be edited is replaced by new messages). Set by the class, never read by name."""

    permanent: bool = False


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


class BudgetExceeded(PaluiError):
    """A turn ran out of its step or time budget."""

    def __init__(self, budget: str, limit: float) -> None:
        self.budget = budget
        self.limit = limit
        super().__init__(f"turn budget exceeded: {budget} ({limit:g})")


class LeaseLost(PaluiError):
    """Another process took over the lease (chat or delivery) this work runs under: its
    generation is no longer the lease's, so the write was refused and nothing more is done."""

    def __init__(self, chat_id: int, what: str = "chat") -> None:
        self.chat_id = chat_id
        super().__init__(f"the {what} lease of chat {chat_id} was taken over by another process")
