"""Memory (DESIGN §1.7): the session's summary (compaction), and long-term memory in recall —
the recall card's switches, auto-recall before a turn, auto-save at compaction and at /new.

    switches  the three switches (palui.toml defaults, the person's taps) and the skip rate
    recall    auto-recall: recall's profile matched against the message, 1.5 s at most
    keeper    compaction and auto-save, crash-safe, in the chat's worker between turns
    memory    `Memory`: the one object the chat workers, the turns and the sheet talk to
"""

from palui.memory.memory import Memory, MemoryConfig
from palui.memory.recall import Recalled

__all__ = ["Memory", "MemoryConfig", "Recalled"]
