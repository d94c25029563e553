"""Running Python in a bubblewrap sandbox, never blocking the event loop.

The sandbox unshares every namespace (no network: only its own loopback; its own pids, so the
whole run dies with its first process) and may make no more user namespaces; a seccomp filter
refuses the syscalls an escape would need (palui.sandbox.seccomp). It sees the system read-only
(`/usr` and the usual links), a size-capped tmpfs home, /tmp and /dev/shm, a read-only minimal
/dev, and nothing else: not Palui's data dir, config or working directory. Its environment is
cleared down to a few plain variables. Memory and processes are capped for the run as a whole
(palui.sandbox.confine); the wall clock is kept here, and at the end the sandbox's first process
is killed, which takes every process of its pid namespace with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from palui.logs import get_logger
from palui.sandbox import seccomp
from palui.sandbox.bridge import Bridge
from palui.sandbox.cgroup import RunCgroup, Usage
from palui.sandbox.confine import Confinement
from palui.sandbox.limits import MB, SandboxLimits

log = get_logger("palui.sandbox")

INSIDE = Path(__file__).parent / "inside"
MOUNT = "/opt/palui"  # where the launcher and palui_tools appear inside
HOME = "/home/sandbox"
# Only these host paths are visible, read-only; Palui's data dir must not be under them.
SYSTEM = ("/usr",)
LINKS = (("usr/bin", "/bin"), ("usr/sbin", "/sbin"), ("usr/lib", "/lib"), ("usr/lib64", "/lib64"))
ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": HOME,
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONUNBUFFERED": "1",  # what was printed before a timeout still reaches the result
    "PYTHONDONTWRITEBYTECODE": "1",
}
PROBE_TIMEOUT_S = 10
GONE_TIMEOUT_S = 5


@dataclass(frozen=True, slots=True)
class RunResult:
    exit_code: int | None  # None: killed at the time limit
    stdout: str
    stderr: str
    stdout_cut: bool = False
    stderr_cut: bool = False
    timed_out: bool = False
    bridge_calls: int = 0
    processes: int = 0  # the process cap this run had
    usage: Usage = field(default_factory=Usage)  # what the run's cgroup saw (nothing without one)


@dataclass(frozen=True, slots=True)
class Handed:
    """What bubblewrap reads from descriptors Palui opened: the seccomp program, and the files
    of `inside/` as data. Bubblewrap may run as host `nobody`, which can't walk to an install
    under a private home (/root/…); a pipe it is handed needs no path at all."""

    seccomp: int
    files: tuple[tuple[int, str], ...]  # (descriptor, path inside the sandbox)

    @property
    def fds(self) -> tuple[int, ...]:
        return (self.seccomp, *(fd for fd, _ in self.files))

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


def isolation_args(bwrap: str, limits: SandboxLimits, handed: Handed) -> list[str]:
    # A command line laid out by hand: each option beside its value.
    args = [
        bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--uid", "65534",
        "--gid", "65534", "--die-with-parent", "--new-session", "--clearenv",
        "--seccomp", str(handed.seccomp),
    ]  # fmt: skip
    for name, value in ENV.items():
        args += ["--setenv", name, value]
    for path in SYSTEM:
        args += ["--ro-bind", path, path]
    for target, link in LINKS:
        args += ["--symlink", target, link]
    # A minimal /dev, read-only past its own size-capped /dev/shm (its device nodes still work).
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(limits.shm_mb * MB), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    for path in ("/tmp", HOME):
        args += ["--size", str(limits.tmpfs_mb * MB), "--tmpfs", path]
    for fd, path in handed.files:
        args += ["--ro-bind-data", str(fd), path]
    args += ["--chdir", HOME, "--remount-ro", "/"]
    return args


def resolve(bwrap: str) -> str | None:
    return shutil.which(bwrap)


async def probe(
    bwrap: str, data_dir: Path, limits: SandboxLimits, confinement: Confinement
) -> str | None:
    """Why the sandbox can't be set up here, or None when it can (one real, empty sandbox)."""
    found = resolve(bwrap)
    if found is None:
        return f"bubblewrap was not found ({bwrap!r} is not an executable on PATH)"
    visible = _visible(data_dir)
    if visible is not None:
        return f"Palui's data dir {visible} is inside {', '.join(SYSTEM)}, which the sandbox sees"
    if seccomp.native() is None:
        return "there is no seccomp filter for this machine's architecture (x86_64, aarch64)"
    handed = _hand_over()
    try:
        process = await asyncio.create_subprocess_exec(
            *isolation_args(found, limits, handed),
            "true",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={},
            pass_fds=handed.fds,
            **confinement.spawn_user(),
        )
    except OSError as exc:
        return f"bubblewrap could not be started ({exc.strerror}){_as_nobody(confinement)}"
    finally:
        handed.close()
    try:
        _, err = await asyncio.wait_for(process.communicate(), PROBE_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        return "bubblewrap did not finish setting up an empty sandbox in time"
    if process.returncode != 0:
        reason = err.decode(errors="replace").strip().splitlines()
        why = reason[-1] if reason else "no reason"
        return f"bubblewrap refused to set up the sandbox: {why}{_as_nobody(confinement)}"
    return None


def _as_nobody(confinement: Confinement) -> str:
    if not confinement.spawn_user():
        return ""
    return (
        " (Palui runs as root, so bubblewrap runs as host user nobody: it must be able to read "
        "bubblewrap and the Python inside)"
    )


def _visible(data_dir: Path) -> Path | None:
    data = data_dir.resolve()
    return data if any(data.is_relative_to(path) for path in SYSTEM) else None


def _hand_over() -> Handed:
    arch = seccomp.native()
    if arch is None:
        raise RuntimeError("no seccomp filter for this architecture")  # the probe said so
    files = tuple(
        (_pipe_of(path.read_bytes()), f"{MOUNT}/{path.name}")
        for path in sorted(INSIDE.glob("*.py"))
    )
    return Handed(_pipe_of(seccomp.program(arch)), files)


def _pipe_of(data: bytes) -> int:
    """`data` on a pipe's read end (a few KB at most: it fits the pipe's buffer)."""
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return read


class Sandbox:
    def __init__(
        self, bwrap: str, python: str, limits: SandboxLimits, confinement: Confinement
    ) -> None:
        self._bwrap = bwrap
        self._python = python
        self.limits = limits
        self.confinement = confinement

    async def run(self, code: str, bridge: Bridge) -> RunResult:
        """Run `code`; the process and all it started are gone when this returns (or raises)."""
        found = resolve(self._bwrap) or self._bwrap
        cgroup = self._cgroup()
        # Without a cgroup each process gets its share of the memory; with one, the cgroup holds
        # the total and a single process may use all of it.
        memory, processes = (
            (self.limits.process_memory_bytes, self.limits.rlimit_processes)
            if cgroup is None
            else (self.limits.memory_bytes, self.limits.processes)
        )
        handed = _hand_over()
        info_read, info_write = os.pipe()
        # A command line laid out by hand: each option beside its value.
        argv = [
            *isolation_args(found, self.limits, handed), "--info-fd", str(info_write),
            self._python, "-I", f"{MOUNT}/start.py", str(memory), str(processes),
            str(self.limits.tmpfs_mb * MB), str(bridge.sandbox_fd),
        ]  # fmt: skip
        if cgroup is not None:  # bubblewrap's first process joins it, so all it starts is in
            argv = ["/bin/sh", "-c", 'echo $$ >"$0" && exec "$@"', str(cgroup.procs), *argv]
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(info_write, bridge.sandbox_fd, *handed.fds),
                start_new_session=True,
                env={},
                **self.confinement.spawn_user(cgrouped=cgroup is not None),
            )
        except BaseException:
            os.close(info_read)
            if cgroup is not None:
                cgroup.remove()
            raise
        finally:
            os.close(info_write)
            handed.close()
            bridge.handed_over()
        run = _Run(process)
        serving = asyncio.create_task(bridge.serve(), name="sandbox-bridge")
        try:
            await run.find_first(info_read, self.limits.timeout_s)
            result = await self._watch(run, code, bridge)
        finally:
            await run.end()
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving
            bridge.close()
            usage = cgroup.usage() if cgroup is not None else Usage()
            if cgroup is not None:
                cgroup.remove()
        return replace(result, processes=processes, usage=usage)

    def _cgroup(self) -> RunCgroup | None:
        delegated = self.confinement.cgroup
        if delegated is None:
            return None
        try:
            return delegated.create(self.limits)
        except OSError as exc:
            # The per-process rlimits still bound the total (at a smaller share each).
            log.warning("sandbox_cgroup_failed", error=exc.strerror)
            return None

    async def _watch(self, run: _Run, code: str, bridge: Bridge) -> RunResult:
        process = run.process
        assert process.stdin and process.stdout and process.stderr
        limit = self.limits.output_bytes
        out = asyncio.ensure_future(_read(process.stdout, limit))
        err = asyncio.ensure_future(_read(process.stderr, limit))
        with contextlib.suppress(ConnectionError):
            process.stdin.write(code.encode())
            await process.stdin.drain()
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), self.limits.timeout_s)
            timed_out = False
        except TimeoutError:
            timed_out = True
            log.info("sandbox_timeout", timeout_s=self.limits.timeout_s)
            await run.end()
        (stdout, stdout_more), (stderr, stderr_more) = await asyncio.gather(out, err)
        return RunResult(
            None if timed_out else process.returncode,
            stdout,
            stderr,
            stdout_more,
            stderr_more,
            timed_out,
            bridge.calls,
        )


class _Run:
    """One sandbox process and a pidfd on its pid namespace's first process."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._pidfd: int | None = None
        self._ended = False

    async def find_first(self, info_read: int, timeout_s: float) -> None:
        """Hold the sandbox's pid 1 by a pidfd (its host pid comes on bubblewrap's --info-fd).
        A pidfd can't later name another process that reused the pid."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        with os.fdopen(info_read, "rb", buffering=0) as pipe:
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), pipe
            )
            try:
                raw = await asyncio.wait_for(reader.readuntil(b"}"), timeout_s)
            except (asyncio.IncompleteReadError, TimeoutError):
                return  # bubblewrap failed before the sandbox existed, or hangs: killpg then
            finally:
                transport.close()
        try:
            pid = json.loads(raw).get("child-pid")
        except ValueError:
            return
        if not isinstance(pid, int):
            return
        with contextlib.suppress(OSError):  # gone already, or no pidfds: the killpg is left
            pidfd = os.pidfd_open(pid)
            if _parent(pid) == self.process.pid:  # still bubblewrap's child, not a reused pid
                self._pidfd = pidfd
            else:
                os.close(pidfd)

    async def end(self) -> None:
        """Kill the run, if it still runs, and wait until its every process is gone."""
        if self._ended:
            return
        self._ended = True
        if self._pidfd is not None:
            try:
                await _kill_namespace(self._pidfd)
            finally:
                os.close(self._pidfd)
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        await self.process.wait()


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


async def _kill_namespace(pidfd: int) -> None:
    """SIGKILL to a pid namespace's first process ends all of it; it counts as exited (its
    pidfd readable) only once every other process of the namespace is gone."""
    loop = asyncio.get_running_loop()
    gone: asyncio.Future[None] = loop.create_future()

    def exited() -> None:
        if not gone.done():
            gone.set_result(None)

    loop.add_reader(pidfd, exited)
    try:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        await asyncio.wait_for(gone, GONE_TIMEOUT_S)
    finally:
        loop.remove_reader(pidfd)


async def _read(stream: asyncio.StreamReader, limit: int) -> tuple[str, bool]:
    """Up to `limit` bytes of a stream (as text) and whether there was more; the rest is read
    and dropped, so a chatty run never blocks on a full pipe."""
    kept = bytearray()
    more = False
    while chunk := await stream.read(65_536):
        room = limit - len(kept)
        if room > 0:
            kept += chunk[:room]
        more = more or len(chunk) > room
    return kept.decode(errors="replace"), more
