"""The sandbox holds as a whole: memory and processes capped for the run together, size-capped
tmpfs and a read-only /dev, no nested user namespaces, a seccomp filter (palui.sandbox)."""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from palui.config import RunCodeSettings
from palui.sandbox import RunCode, SandboxLimits, seccomp
from palui.sandbox.cgroup import RunCgroup
from palui.sandbox.confine import Confinement, choose
from tests.toolkit import needs_bwrap, ready
from tests.toolkit import run_python as run

MB = 1024 * 1024

# Twelve children, each trying to hold 100 MB in 10 MB steps. Each tells the parent on a pipe
# of its own how far it got (a "+" per 10 MB held, then a "."; a child the kernel killed just
# closes it), and holds on until the parent has summed what every process in the sandbox holds
# at that moment (PSS: shared pages counted once), its peak; then a child that ran out re-raises.
MEMORY_BOMB = """
import os
go_r, go_w = os.pipe()
told = []
for _ in range(12):
    told_r, told_w = os.pipe()
    try:
        pid = os.fork()
    except BlockingIOError:
        break
    if pid == 0:
        os.close(go_w)
        held = []
        try:
            for _ in range(10):
                held.append(b"\\1" * (10 * 1024 * 1024))
                os.write(told_w, b"+")
        except MemoryError:
            os.write(told_w, b".")
            os.read(go_r, 1)
            raise
        os.write(told_w, b".")
        os.read(go_r, 1)
        os._exit(0)
    os.close(told_w)
    told.append(told_r)
held = 0
for told_r in told:
    while (byte := os.read(told_r, 1)) not in (b".", b""):
        held += 1
peak = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        rollup = open(f"/proc/{pid}/smaps_rollup").read()
    except OSError:
        continue
    for line in rollup.splitlines():
        if line.startswith("Pss:"):
            peak += int(line.split()[1]) * 1024
print(f"children={len(told)} held_mb={held * 10} peak_bytes={peak}", flush=True)
os.close(go_w)
for _ in told:
    os.wait()
"""


@needs_bwrap
async def test_a_forked_memory_bomb_stays_within_the_runs_total(tmp_path: Path) -> None:
    run_code = await ready(tmp_path, memory_mb=256, processes=8)
    outcome = await run(run_code, MEMORY_BOMB)
    found = re.search(r"children=(\d+) held_mb=(\d+) peak_bytes=(\d+)", outcome.text)
    assert found, outcome.text
    children, held_mb, peak = (int(value) for value in found.groups())
    assert children <= 6  # 8 processes, bubblewrap's first and the code's own included
    assert held_mb < 12 * 100
    assert peak <= 256 * MB
    assert "ran out of memory (the limit is 256 MB for the whole run)" in outcome.text


FORK_BOMB = """
import os, signal
forked = 0
try:
    while True:
        if os.fork() == 0:
            signal.pause()
        forked += 1
finally:
    alive = sum(name.isdigit() for name in os.listdir("/proc"))
    print(f"forked={forked} alive={alive}", flush=True)
"""


@needs_bwrap
async def test_a_fork_bomb_is_stopped_at_the_process_cap(tmp_path: Path) -> None:
    outcome = await run(await ready(tmp_path, processes=8), FORK_BOMB)
    assert outcome.is_error
    found = re.search(r"forked=(\d+) alive=(\d+)", outcome.text)
    assert found, outcome.text
    assert int(found[1]) <= 6 and int(found[2]) <= 8
    assert "It hit the limit of 8 processes and threads at once." in outcome.text


FILL = """
import os
for path in ("/dev/shm/fill", "/tmp/fill", os.path.expanduser("~/fill"), "/dev/fill"):
    written = 0
    try:
        with open(path, "wb") as file:
            while written < 300 * 1024 * 1024:
                written += file.write(bytes(1024 * 1024))
                file.flush()
        print(path, "wrote", written)
    except OSError as exc:
        print(path, "stopped at", written, exc.strerror)
    if os.path.exists(path):
        os.unlink(path)
"""


@needs_bwrap
async def test_writing_300_mb_stops_at_the_cap_of_every_writable_place(tmp_path: Path) -> None:
    outcome = await run(await ready(tmp_path), FILL)
    stops = dict(re.findall(r"^(\S+) stopped at (\d+)", outcome.text, re.MULTILINE))
    assert set(stops) == {"/dev/shm/fill", "/tmp/fill", "/home/sandbox/fill", "/dev/fill"}
    assert int(stops["/dev/shm/fill"]) <= 16 * MB
    assert int(stops["/tmp/fill"]) <= 64 * MB
    assert int(stops["/home/sandbox/fill"]) <= 64 * MB
    assert "/dev/fill stopped at 0 Read-only file system" in outcome.text
    assert " wrote " not in outcome.text


def syscalls_code(arch: seccomp.Arch) -> str:
    numbers = dict(arch.numbers)
    return f"""
import ctypes, os, threading, subprocess
libc = ctypes.CDLL(None, use_errno=True)
numbers = {numbers!r}

def call(name, *args):
    result = libc.syscall(numbers[name], *[ctypes.c_long(arg) for arg in args])
    print(name, "ok" if result >= 0 else os.strerror(ctypes.get_errno()))

call("unshare", 0x10000000)  # CLONE_NEWUSER
call("unshare", 0x00020000)  # CLONE_NEWNS
call("clone", 0x10000000 | 17, 0, 0, 0, 0)  # CLONE_NEWUSER | SIGCHLD
call("ptrace", 0, 0, 0, 0)  # PTRACE_TRACEME
call("mount", 0, 0, 0, 0, 0)
call("keyctl", 0, 0, 0, 0, 0)
call("bpf", 0, 0, 0)
call("perf_event_open", 0, 0, -1, -1, 0)
call("userfaultfd", 0)
call("io_uring_setup", 1, 0)
call("personality", 0x0040000)  # ADDR_NO_RANDOMIZE
call("clone3", 0, 0)
print("query", libc.personality(0xFFFFFFFF) >= 0)
thread = threading.Thread(target=print, args=("a thread runs",))
thread.start(); thread.join()
print(subprocess.run(["echo", "a process runs"], capture_output=True, text=True).stdout)
"""


@needs_bwrap
async def test_the_seccomp_filter_refuses_what_an_escape_needs(tmp_path: Path) -> None:
    arch = seccomp.native()
    assert arch is not None
    outcome = await run(await ready(tmp_path), syscalls_code(arch))
    assert "exit code 0" in outcome.text, outcome.text
    refused = "unshare clone ptrace mount keyctl bpf perf_event_open userfaultfd io_uring_setup"
    for name in [*refused.split(), "personality"]:
        assert f"\n{name} Operation not permitted" in outcome.text, name
    assert "clone3 Function not implemented" in outcome.text  # the C library falls back
    assert "query True" in outcome.text and "a thread runs" in outcome.text
    assert "a process runs" in outcome.text


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the x32 ABI exists on x86_64 only")
@needs_bwrap
async def test_a_syscall_of_another_abi_kills_the_process(tmp_path: Path) -> None:
    code = """
import ctypes
print("before", flush=True)
ctypes.CDLL(None).syscall(0x40000000 | 39)  # getpid, x32
print("after")
"""
    outcome = await run(await ready(tmp_path), code)
    assert outcome.is_error and "before" in outcome.text and "after" not in outcome.text


NESTED_USERNS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("unshare", libc.unshare(0x10000000), os.strerror(ctypes.get_errno()))
print("ptrace", libc.ptrace(0, 0, 0, 0))  # PTRACE_TRACEME: refused by the filter only
"""


@needs_bwrap
async def test_no_nested_user_namespace_even_without_the_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bubblewrap's --disable-userns holds on its own: with an allow-all filter, a new user
    namespace is still refused."""
    allow_all = seccomp._Assembler()
    allow_all.ret(seccomp.RET_ALLOW)
    monkeypatch.setattr(seccomp, "program", lambda arch: allow_all.assemble())
    outcome = await run(await ready(tmp_path, memory_mb=64), NESTED_USERNS)  # Python still runs
    assert "unshare -1" in outcome.text, outcome.text
    assert "ptrace 0" in outcome.text  # the filter was off indeed


def test_this_machine_reports_the_limits_in_force() -> None:
    confinement = choose()
    line = confinement.describe(SandboxLimits())
    if confinement.cgroup is None:
        assert line.startswith(f"rlimits (no cgroup: {confinement.why_no_cgroup})")
        assert "at most 8 processes, 64 MB of address space each (512 MB in all)" in line
        small = confinement.describe(SandboxLimits(memory_mb=64))
        assert "at most 2 processes, 32 MB of address space each (64 MB in all)" in small
    else:
        assert "512 MB of memory and 8 processes for the whole run" in line
    assert "tmpfs /tmp and home 64 MB each, /dev/shm 16 MB, /dev read-only" in line
    assert f"seccomp refuses {len(seccomp.DENIED)} syscalls; no nested user namespaces" in line


@dataclass(frozen=True)
class StandInCgroups:
    """A delegated cgroup as the sandbox sees it: every run's cgroup is `run`, a plain directory
    (the kernel's caps left out)."""

    path: Path
    run: Path

    def create(self, limits: SandboxLimits) -> RunCgroup:
        return RunCgroup(self.run)


@needs_bwrap
async def test_in_a_cgroup_the_run_joins_it_and_one_process_may_use_the_whole_total(
    tmp_path: Path,
) -> None:
    """The wiring, on a stand-in for the run's cgroup (a real one caps in the kernel): the
    sandbox's first process joins it before it starts anything, the per-process share is
    lifted, and what the cgroup counted reaches the result."""
    stand_in = tmp_path / "palui-run-test"
    stand_in.mkdir()
    (stand_in / "cgroup.procs").write_text("")
    (stand_in / "memory.events").write_text("oom_kill 1\n")  # as the kernel would count it
    settings = RunCodeSettings(enabled=True, memory_mb=256, processes=8)
    confine = lambda: Confinement(StandInCgroups(tmp_path, stand_in))  # noqa: E731
    run_code = RunCode(settings, tmp_path / "data", confine=confine)
    assert await run_code.probe() is None, run_code.unavailable
    outcome = await run(run_code, "block = b'1' * (100 * 1024 * 1024); print(len(block))")
    assert "104857600" in outcome.text  # more than 256 / 8 MB: no per-process share
    assert (stand_in / "cgroup.procs").read_text().strip().isdigit()
    assert "ran out of memory (the limit is 256 MB for the whole run)" in outcome.text
