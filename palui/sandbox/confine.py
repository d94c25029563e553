"""How a run's totals are held on this machine, chosen once at start: a cgroup v2 of its own
where Palui may make one, else rlimits set inside (palui/sandbox/inside/start.py) that bound the
total anyway: at most `processes` processes, each with `memory / processes` of address space.

RLIMIT_NPROC does not hold for host root (the kernel exempts it), so when Palui runs as root and
has no cgroup, bubblewrap is started as the host's `nobody`: the sandbox never runs as host root.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from palui.sandbox import seccomp
from palui.sandbox.cgroup import Delegated, RunCgroups, find
from palui.sandbox.limits import MB, SandboxLimits

NOBODY = 65534


@dataclass(frozen=True, slots=True)
class Confinement:
    cgroup: RunCgroups | None  # None: rlimits
    why_no_cgroup: str = ""

    @property
    def drops_root(self) -> bool:
        return self.cgroup is None and os.geteuid() == 0

    def spawn_user(self, *, cgrouped: bool = False) -> dict[str, Any]:
        """Extra arguments for starting bubblewrap (a subprocess's user and groups): a run held
        by rlimits alone never starts as host root."""
        if cgrouped or os.geteuid() != 0:
            return {}
        return {"user": NOBODY, "group": NOBODY, "extra_groups": []}

    def describe(self, limits: SandboxLimits) -> str:
        """The limits in force, one line (for `palui doctor`)."""
        if self.cgroup is not None:
            totals = (
                f"cgroup v2 ({self.cgroup.path}): {limits.memory_mb} MB of memory and "
                f"{limits.processes} processes for the whole run"
            )
        else:
            share = limits.process_memory_bytes // MB
            totals = (
                f"rlimits (no cgroup: {self.why_no_cgroup}): at most {limits.rlimit_processes} "
                f"processes, {share} MB of address space each ({limits.memory_mb} MB in all)"
            )
            if self.drops_root:
                totals += ", run as host user nobody"
        filtered = (
            f"seccomp refuses {len(seccomp.DENIED)} syscalls"
            if seccomp.native()
            else "no seccomp filter for this architecture"
        )
        return (
            f"{totals}; tmpfs /tmp and home {limits.tmpfs_mb} MB each, /dev/shm "
            f"{limits.shm_mb} MB, /dev read-only; {filtered}; no nested user namespaces"
        )


def choose() -> Confinement:
    found = find()
    if isinstance(found, Delegated):
        return Confinement(found)
    return Confinement(None, found)
