"""A cgroup v2 per run, where this machine lets Palui make one: it caps the memory and the
processes of the whole run together (every process, tmpfs pages included), which per-process
rlimits can only approximate.

Palui needs a delegated subtree: a cgroup v2 directory it may write, with the `memory` and
`pids` controllers on for its children (systemd's `Delegate=yes`, or a container that hands one
over). It looks at its own cgroup and that cgroup's parent. Anything missing and the sandbox
falls back to rlimits (palui/sandbox/inside/start.py); `palui doctor` says which is in force.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from palui.logs import get_logger
from palui.sandbox.limits import SandboxLimits

log = get_logger("palui.sandbox")

CONTROLLERS = ("memory", "pids")
PREFIX = "palui-run-"


@dataclass(frozen=True, slots=True)
class Usage:
    """What the run's cgroup saw, read before it is removed."""

    peak_bytes: int | None = None  # memory.peak (Linux ≥ 5.19)
    oom_killed: bool = False  # the memory cap killed a process of the run
    process_capped: bool = False  # a fork failed at pids.max


@dataclass(frozen=True, slots=True)
class Delegated:
    """A cgroup v2 directory Palui may make run cgroups in."""

    path: Path

    def create(self, limits: SandboxLimits) -> RunCgroup:
        """A fresh cgroup with the run's caps. Raises OSError if the kernel refuses."""
        path = self.path / f"{PREFIX}{secrets.token_hex(6)}"
        path.mkdir()
        try:
            _write(path / "memory.max", str(limits.memory_bytes))
            if (path / "memory.swap.max").exists():  # no swapping past the cap
                _write(path / "memory.swap.max", "0")
            _write(path / "pids.max", str(limits.processes))
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            raise
        return RunCgroup(path)


class RunCgroups(Protocol):
    """Where a run's cgroup is made: `Delegated` where this machine hands a subtree over (a
    test's stand-in makes it in a plain directory, the kernel's part left out)."""

    @property
    def path(self) -> Path: ...

    def create(self, limits: SandboxLimits) -> RunCgroup: ...


@dataclass(frozen=True, slots=True)
class RunCgroup:
    path: Path

    @property
    def procs(self) -> Path:
        """The file a process writes its pid into to join (before it starts the sandbox)."""
        return self.path / "cgroup.procs"

    def usage(self) -> Usage:
        events = _events(self.path / "memory.events")
        peak = _read(self.path / "memory.peak")
        return Usage(
            int(peak) if peak and peak.isdigit() else None,
            events.get("oom_kill", 0) > 0,
            _events(self.path / "pids.events").get("max", 0) > 0,
        )

    def remove(self) -> None:
        """Called once every process of the run is gone; a leftover is logged, never fatal."""
        try:
            self.path.rmdir()
        except OSError as exc:
            log.warning("sandbox_cgroup_left", path=str(self.path), error=exc.strerror)


def find(proc: Path = Path("/proc/self")) -> Delegated | str:
    """The delegated cgroup to use, or why there is none (then rlimits are the fallback)."""
    mount = _cgroup2_mount(proc / "mountinfo")
    if mount is None:
        return "no cgroup v2 hierarchy is mounted"
    own = _own_cgroup(proc / "cgroup")
    if own is None:
        return "this process is in no cgroup v2"
    here = mount / own.lstrip("/")
    reasons = []
    for candidate in (here, here.parent):
        if not candidate.is_relative_to(mount):
            continue
        reason = _usable(candidate)
        if reason is None:
            return Delegated(candidate)
        reasons.append(f"{candidate}: {reason}")
    return "; ".join(reasons)


def _usable(path: Path) -> str | None:
    """Why Palui can't make capped cgroups under `path` (None: it can; tried for real)."""
    enabled = (_read(path / "cgroup.subtree_control") or "").split()
    missing = [name for name in CONTROLLERS if name not in enabled]
    if missing:
        try:
            _write(path / "cgroup.subtree_control", " ".join(f"+{name}" for name in missing))
        except OSError as exc:
            names = " and ".join(missing)
            return f"no {names} controller delegated to its children ({exc.strerror})"
    try:
        run = Delegated(path).create(SandboxLimits())
    except OSError as exc:
        return f"a capped child cgroup can't be made ({exc.strerror})"
    run.remove()
    return None


def _cgroup2_mount(mountinfo: Path) -> Path | None:
    for line in (_read(mountinfo) or "").splitlines():
        fields = line.split(" - ")
        if len(fields) == 2 and fields[1].split()[:1] == ["cgroup2"]:
            return Path(fields[0].split()[4])
    return None


def _own_cgroup(cgroup: Path) -> str | None:
    for line in (_read(cgroup) or "").splitlines():
        if line.startswith("0::"):
            return line[3:]
    return None


def _events(path: Path) -> dict[str, int]:
    found = {}
    for line in (_read(path) or "").splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            found[name] = int(value)
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _write(path: Path, value: str) -> None:
    # One write(2) of the whole value: cgroup files take a value per write.
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)
