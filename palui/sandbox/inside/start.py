"""The sandbox's launcher:
`python3 -I /opt/palui/start.py <address space> <processes> <file size> <bridge fd>`.

It reads the code from stdin, sets its limits (the hard limits too, so the code can't raise
them), connects `palui_tools` to the bridge, then runs the code as `__main__`. The limits are
inherited by every process the code starts: each gets the address space given, the processes
of the sandbox's user together (this one and bubblewrap's first included) at most the number
given, and no file may grow past the size given.
"""

import errno
import linecache
import os
import resource
import sys
import traceback

FILENAME = "<run_code>"


def _limit(memory: int, processes: int, file_size: int) -> None:
    for which, value in (
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_NPROC, processes),
        (resource.RLIMIT_FSIZE, file_size),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(which, (value, value))


def main() -> int:
    memory, processes, file_size = (int(value) for value in sys.argv[1:4])
    bridge_fd = int(sys.argv[4])
    code = sys.stdin.read()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import palui_tools  # type: ignore[import-not-found]  # beside this file, in the sandbox

    palui_tools.connect(bridge_fd)
    # Tracebacks can then quote the code's own lines.
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    sys.argv = [FILENAME]
    _limit(memory, processes, file_size)
    try:
        namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        exec(compile(code, FILENAME, "exec"), namespace)
    except MemoryError:
        sys.stderr.write(
            f"MemoryError: the code went over its memory limit ({memory >> 20} MB each).\n"
        )
        return 1
    except SystemExit:
        raise
    except BaseException as exc:
        # From the code's own frame on: the launcher's frame would only confuse the model.
        traceback.print_exception(
            type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None
        )
        if (isinstance(exc, OSError) and exc.errno == errno.EAGAIN) or _no_thread(exc):
            sys.stderr.write(f"The code went over its limit of {processes} processes.\n")
        return 1
    return 0


def _no_thread(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)


if __name__ == "__main__":
    sys.exit(main())
