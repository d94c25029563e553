"""The sandbox's launcher: `python3 -I /opt/palui/start.py <memory bytes> <bridge fd>`.

It reads the code from stdin, caps the address space (the hard limit too, so the code can't
raise it), connects `palui_tools` to the bridge, then runs the code as `__main__`.
"""

import linecache
import os
import resource
import sys
import traceback

FILENAME = "<run_code>"


def _limit(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main() -> int:
    memory, bridge_fd = int(sys.argv[1]), int(sys.argv[2])
    code = sys.stdin.read()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import palui_tools  # type: ignore[import-not-found]  # beside this file, in the sandbox

    palui_tools.connect(bridge_fd)
    # Tracebacks can then quote the code's own lines.
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    sys.argv = [FILENAME]
    _limit(memory)
    try:
        namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        exec(compile(code, FILENAME, "exec"), namespace)
    except MemoryError:
        sys.stderr.write(
            f"MemoryError: the code went over its memory limit ({memory // 1048576} MB).\n"
        )
        return 1
    except SystemExit:
        raise
    except BaseException as exc:
        # From the code's own frame on: the launcher's frame would only confuse the model.
        traceback.print_exception(
            type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
