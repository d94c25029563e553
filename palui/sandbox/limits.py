"""What one sandboxed run may use: wall clock, memory, processes, file space, output, and calls
back into Palui."""

from __future__ import annotations

from dataclasses import dataclass

# Calls of Palui's built-in read tools one run may make through the bridge (never more).
MAX_BRIDGE_CALLS = 50
MB = 1024 * 1024
MIN_PROCESS_MB = 32  # an address space Python starts and does a little work in


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    timeout_s: float = 30
    memory_mb: int = 512  # the whole run's, every process of it together
    processes: int = 8  # processes and threads at once, the launcher's own two included
    tmpfs_mb: int = 64  # each of /tmp and the home
    shm_mb: int = 16  # /dev/shm
    output_chars: int = 8_000
    bridge_calls: int = MAX_BRIDGE_CALLS

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * MB

    @property
    def rlimit_processes(self) -> int:
        """The process cap without a cgroup: `processes`, fewer when `memory_mb` can't give each
        a share Python starts in (two at least: bubblewrap's first process and the code's)."""
        return max(2, min(self.processes, self.memory_mb // MIN_PROCESS_MB))

    @property
    def process_memory_bytes(self) -> int:
        """Without a cgroup, each process's address space gets an equal share, so that all the
        processes the cap allows together stay within `memory_mb`."""
        return self.memory_bytes // self.rlimit_processes

    @property
    def output_bytes(self) -> int:
        # Enough bytes for `output_chars` characters of any UTF-8 text; the rest is drained unread.
        return self.output_chars * 4


def cut(text: str, limit: int, *, more: bool = False) -> str:
    """`text` at most `limit` characters, marked when anything was left out."""
    if len(text) <= limit and not more:
        return text
    return f"{text[:limit]}\n[… output cut at {limit:,} characters]"
