"""Running spn as a hostile user would, and checking that it refuses cleanly.

A refusal is: exit status 2, exactly one line on stderr starting ``spn: error:``,
no traceback, and no more than :data:`MEMORY_LIMIT` bytes of memory on the way.

- :func:`run_spn` runs the ``spn`` command in a child process whose address space
  is limited (RLIMIT_AS) and whose run time is bounded: an input that would read
  /dev/zero whole, allocate without end or hang fails the test instead of the machine.
- :func:`memory_headroom` bounds the memory of in-process calls the same way
  (for hypothesis tests, where a process per example would be too slow).
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: what a rejected input may cost: the address space of the whole child process
MEMORY_LIMIT = 1 << 30
#: seconds a rejected input may take (a hang fails the test)
TIME_LIMIT = 60


def _address_space() -> int:
    """This process's current virtual size in bytes (VmSize)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_spn(*args, stdin: bytes | None = None, timeout: float = TIME_LIMIT, cwd=ROOT,
            memory: int = MEMORY_LIMIT) -> subprocess.CompletedProcess:
    """``spn ARGS`` in a child process with at most ``memory`` bytes of address space (a real
    solve of a shipped model needs about 0.6 GB) and ``timeout`` seconds (TimeoutExpired past it)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    env = dict(os.environ, SPN_DEBUG="")
    return subprocess.run([sys.executable, "-m", "spn.cli", *map(str, args)], input=stdin,
                          capture_output=True, timeout=timeout, cwd=cwd, env=env, preexec_fn=limit)


def assert_refused(result: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2, one ``spn: error:`` line on stderr naming ``words``, no traceback; return the line."""
    err = result.stderr.decode(errors="replace") if isinstance(result.stderr, bytes) else result.stderr
    lines = [line for line in err.splitlines() if line.strip()]
    assert result.returncode == 2, f"exit {result.returncode}, stderr: {err[-2000:]}"
    assert "Traceback" not in err, err[-2000:]
    errors = [line for line in lines if line.startswith("spn: error:")]
    assert len(errors) == 1, f"expected one error line, got: {lines}"
    for word in words:
        assert word in errors[0], f"{word!r} not in {errors[0]!r}"
    return errors[0]


@contextlib.contextmanager
def memory_headroom(extra: int = MEMORY_LIMIT):
    """Within the block, this process may map at most ``extra`` more bytes (MemoryError past it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _address_space() + extra
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
