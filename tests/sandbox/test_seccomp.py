"""The seccomp program, run by a small classic-BPF interpreter on both architectures' tables
(the kernel runs it for real in tests/sandbox/test_sandbox_limits.py, on this machine's)."""

from __future__ import annotations

import errno
import re
import struct
from pathlib import Path

import pytest

from palui.sandbox import seccomp
from palui.sandbox.seccomp import AARCH64, X86_64, Arch

EPERM = seccomp.RET_ERRNO | errno.EPERM
ENOSYS = seccomp.RET_ERRNO | errno.ENOSYS
ALLOW, KILL = seccomp.RET_ALLOW, seccomp.RET_KILL_PROCESS
AUDIT_ARCH_I386 = 0x40000003
GETPID = {X86_64.audit: 39, AARCH64.audit: 172}
CLONE_NEWUSER, CLONE_VM, SIGCHLD = 0x10000000, 0x100, 17
ADDR_NO_RANDOMIZE = 0x0040000


def verdict(arch: Arch, nr: int, *args: int, audit: int | None = None) -> int:
    """What the filter answers for one syscall (struct seccomp_data, little-endian)."""
    words = [*args, 0, 0, 0, 0, 0, 0][:6]
    data = struct.pack("<iIQ6Q", nr, arch.audit if audit is None else audit, 0, *words)
    program = seccomp.program(arch)
    code = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    pc, accumulator = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == seccomp.RET_K:
            return k
        if op == seccomp.LD_W_ABS:
            accumulator = struct.unpack_from("<I", data, k)[0]
            pc += 1
            continue
        taken = {
            seccomp.JEQ_K: accumulator == k,
            seccomp.JGE_K: accumulator >= k,
            seccomp.JSET_K: bool(accumulator & k),
        }[op]
        pc += 1 + (jt if taken else jf)


@pytest.mark.parametrize("arch", [X86_64, AARCH64], ids=["x86_64", "aarch64"])
def test_every_denied_syscall_gets_eperm_and_the_rest_run(arch: Arch) -> None:
    for name in seccomp.DENIED:
        number = arch.number(name)
        if number is not None:
            assert verdict(arch, number) == EPERM, name
    assert verdict(arch, GETPID[arch.audit]) == ALLOW
    clone = arch.numbers["clone"]
    assert verdict(arch, clone, CLONE_NEWUSER | SIGCHLD) == EPERM
    assert verdict(arch, clone, CLONE_VM | SIGCHLD) == ALLOW
    assert verdict(arch, arch.numbers["clone3"]) == ENOSYS
    personality = arch.numbers["personality"]
    assert verdict(arch, personality, 0xFFFFFFFF) == ALLOW
    assert verdict(arch, personality, 0) == ALLOW
    assert verdict(arch, personality, ADDR_NO_RANDOMIZE) == EPERM
    assert verdict(arch, GETPID[arch.audit], audit=AUDIT_ARCH_I386) == KILL


def test_the_x32_abi_is_killed_on_x86_64() -> None:
    assert verdict(X86_64, 0x40000000 | 39) == KILL


def test_only_the_syscalls_aarch64_lacks_are_missing_from_its_table() -> None:
    assert all(X86_64.number(name) is not None for name in seccomp.DENIED)
    missing = {name for name in seccomp.DENIED if AARCH64.number(name) is None}
    assert missing == {"iopl", "ioperm", "modify_ldt", "uselib"}


HEADERS = {
    "x86_64": (X86_64, Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")),
    "aarch64": (AARCH64, Path("/usr/include/asm-generic/unistd.h")),
}


@pytest.mark.parametrize("name", sorted(HEADERS))
def test_the_numbers_match_the_kernel_headers(name: str) -> None:
    arch, header = HEADERS[name]
    if not header.exists():
        pytest.skip(f"{header} is not installed (linux-libc-dev)")
    defined = dict(re.findall(r"#define __NR_(\w+)\s+(\d+)\b", header.read_text()))
    for syscall, number in arch.numbers.items():
        assert int(defined[syscall]) == number, syscall
