"""The sandbox's seccomp filter: a classic-BPF program bubblewrap loads (`--seccomp FD`) before
it runs the code. There is no libseccomp binding in the venv, and the program is small, so it is
assembled here.

It refuses (EPERM) what Python code never needs and what an escape would: new namespaces,
mounts, tracing other processes, the kernel keyring, eBPF, perf, loading kernels or modules,
reboot, swap, userfaultfd and io_uring (both favourite exploit primitives), changing the
personality (e.g. turning address randomisation off). `clone3` passes its flags in memory the
filter can't read, so it gets ENOSYS and the C library falls back to `clone`, whose flags are
checked. A syscall of another ABI (32-bit, or x32 on x86_64) kills the process: the table below
would not match its numbers.
"""

from __future__ import annotations

import errno
import platform
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# <linux/filter.h>, <linux/seccomp.h>, <linux/audit.h>
LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
NR, ARCH, ARG0_LOW = 0, 4, 16  # offsets in struct seccomp_data (little-endian: arg's low word)
X32_BIT = 0x40000000
PERSONALITY_QUERY, PER_LINUX = 0xFFFFFFFF, 0
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET; NEWTIME (0x80) only in clone3.
CLONE_NAMESPACES = sum(
    (0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000)
)


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


DENIED = _words(
    """
    unshare setns mount umount2 pivot_root chroot open_tree move_mount fsopen fsconfig fsmount
    fspick mount_setattr open_by_handle_at name_to_handle_at ptrace process_vm_readv
    process_vm_writev kcmp keyctl add_key request_key bpf perf_event_open kexec_load
    kexec_file_load init_module finit_module delete_module reboot swapon swapoff acct quotactl
    lookup_dcookie vhangup syslog userfaultfd io_uring_setup io_uring_enter io_uring_register
    iopl ioperm modify_ldt uselib
    """
)


@dataclass(frozen=True, slots=True)
class Arch:
    audit: int  # AUDIT_ARCH_*: what seccomp_data.arch holds for this ABI
    numbers: Mapping[str, int]  # syscall numbers (asm/unistd_64.h, asm-generic/unistd.h)
    x32: bool = False  # the x32 ABI shares the arch value; its numbers carry X32_BIT

    def number(self, name: str) -> int | None:
        return self.numbers.get(name)


def _table(pairs: str) -> Mapping[str, int]:
    words = pairs.split()
    pairs_ = zip(words[::2], words[1::2], strict=True)
    return MappingProxyType({name: int(number) for name, number in pairs_})


# The newer syscalls have one number everywhere.
_COMMON = """
    clone3 435 io_uring_setup 425 io_uring_enter 426 io_uring_register 427 open_tree 428
    move_mount 429 fsopen 430 fsconfig 431 fsmount 432 fspick 433 mount_setattr 442
"""
X86_64 = Arch(
    0xC000003E,
    _table(
        _COMMON
        + """
    clone 56 unshare 272 setns 308 mount 165 umount2 166 pivot_root 155 chroot 161 ptrace 101
    process_vm_readv 310 process_vm_writev 311 keyctl 250 add_key 248 request_key 249 bpf 321
    perf_event_open 298 kexec_load 246 kexec_file_load 320 init_module 175 finit_module 313
    delete_module 176 reboot 169 swapon 167 swapoff 168 userfaultfd 323 personality 135
    open_by_handle_at 304 name_to_handle_at 303 acct 163 quotactl 179 lookup_dcookie 212
    vhangup 153 syslog 103 kcmp 312 iopl 172 ioperm 173 modify_ldt 154 uselib 134
    """
    ),
    x32=True,
)
AARCH64 = Arch(
    0xC00000B7,
    _table(
        _COMMON
        + """
    clone 220 unshare 97 setns 268 mount 40 umount2 39 pivot_root 41 chroot 51 ptrace 117
    process_vm_readv 270 process_vm_writev 271 keyctl 219 add_key 217 request_key 218 bpf 280
    perf_event_open 241 kexec_load 104 kexec_file_load 294 init_module 105 finit_module 273
    delete_module 106 reboot 142 swapon 224 swapoff 225 userfaultfd 282 personality 92
    open_by_handle_at 265 name_to_handle_at 264 acct 89 quotactl 60 lookup_dcookie 18
    vhangup 58 syslog 116 kcmp 272
    """
    ),
)
ARCHES = MappingProxyType({"x86_64": X86_64, "amd64": X86_64, "aarch64": AARCH64, "arm64": AARCH64})


def native() -> Arch | None:
    """This machine's table, or None where there is none (then the sandbox is not offered)."""
    return ARCHES.get(platform.machine().lower())


def program(arch: Arch) -> bytes:
    """The filter as bubblewrap reads it: struct sock_filter[], native byte order."""
    asm = _Assembler()
    asm.load(ARCH)
    asm.jump(JEQ_K, arch.audit, fail="kill")
    asm.load(NR)
    if arch.x32:
        asm.jump(JGE_K, X32_BIT, match="kill")
    for name in DENIED:
        if (number := arch.number(name)) is not None:
            asm.jump(JEQ_K, number, match="deny")
    asm.jump(JEQ_K, arch.numbers["clone3"], match="nosys")
    asm.jump(JEQ_K, arch.numbers["personality"], fail="not_personality")
    asm.load(ARG0_LOW)
    asm.jump(JEQ_K, PERSONALITY_QUERY, match="allow")
    asm.jump(JEQ_K, PER_LINUX, match="allow", fail="deny")
    asm.label("not_personality")
    asm.jump(JEQ_K, arch.numbers["clone"], fail="allow")
    asm.load(ARG0_LOW)  # clone's flags
    asm.jump(JSET_K, CLONE_NAMESPACES, match="deny", fail="allow")
    asm.label("allow")
    asm.ret(RET_ALLOW)
    asm.label("deny")
    asm.ret(RET_ERRNO | errno.EPERM)
    asm.label("nosys")
    asm.ret(RET_ERRNO | errno.ENOSYS)
    asm.label("kill")
    asm.ret(RET_KILL_PROCESS)
    return asm.assemble()


class _Assembler:
    """Straight-line classic BPF with forward jumps to labels (offsets are relative, ≤ 255)."""

    def __init__(self) -> None:
        self._code: list[tuple[int, str | None, str | None, int]] = []
        self._labels: dict[str, int] = {}

    def load(self, offset: int) -> None:
        self._code.append((LD_W_ABS, None, None, offset))

    def jump(self, op: int, k: int, *, match: str | None = None, fail: str | None = None) -> None:
        """Go to `match` when the test holds, to `fail` when not; None: the next instruction."""
        self._code.append((op, match, fail, k))

    def ret(self, value: int) -> None:
        self._code.append((RET_K, None, None, value))

    def label(self, name: str) -> None:
        self._labels[name] = len(self._code)

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (op, match, fail, k) in enumerate(self._code):
            out += struct.pack(
                "=HBBI", op, self._offset(index, match), self._offset(index, fail), k
            )
        return bytes(out)

    def _offset(self, index: int, label: str | None) -> int:
        if label is None:
            return 0
        offset = self._labels[label] - index - 1
        if not 0 <= offset <= 255:
            raise ValueError(f"the jump to {label!r} is out of classic BPF's reach")
        return offset
