"""Limits checked before any work starts, so that no input can exhaust memory or hang a reader.

Every reader calls :func:`input_file` (or :func:`read_input`, which also reads)
before it opens a file: only regular files are read (a named pipe would block,
``/dev/zero`` never ends), and only up to a size that fits the kind of file.
Numbers read from a file are checked against the bounds here, which are far
beyond any real cluster but small enough for the arithmetic of the engines (C
integers, finite rates whose ratios stay far from overflow).

>>> input_file("models/mapreduce.yaml", max_bytes=DESCRIPTION_BYTES, what="model").name
'mapreduce.yaml'
>>> input_file("/dev/null", max_bytes=DESCRIPTION_BYTES, what="model")
Traceback (most recent call last):
...
spn.exceptions.ModelError: /dev/null: not a regular file (a model is read from a file)
>>> len(read_input("models/mapreduce.yaml", max_bytes=DESCRIPTION_BYTES, what="model")) > 100
True
"""

from __future__ import annotations

import os
import resource
import stat
from pathlib import Path

from spn.exceptions import ModelError

#: a model description (YAML/JSON): real ones are a few kB (3,000 phases: about 200 kB)
DESCRIPTION_BYTES = 16 << 20
#: a PNML or GreatSPN net
NET_BYTES = 64 << 20
#: one line (one event) of a Spark event log, and one record of a .jhist
LOG_LINE_BYTES = 64 << 20
#: the largest count anything is made of: tasks, tokens, containers, users, servers
MAX_COUNT = 10_000_000
#: the largest Erlang shape (stages of one task-time law)
MAX_SHAPE = 1_000
#: nesting depth of YAML/JSON structures and of --set paths
MAX_DEPTH = 64
#: YAML aliases (``*name``) in one description
MAX_ALIASES = 100
#: values (mappings, lists, scalars) of one description, aliases expanded: each costs a few
#: microseconds and a few hundred bytes to read and check (3,000 phases are about 30,000)
MAX_NODES = 200_000
#: phases of one description (each adds 6 places and 4 activities to the net; exploring costs
#: about P^2 for P phases in a chain: 3,000 take about 7 s)
MAX_PHASES = 5_000
#: edges of one description
MAX_EDGES = 100_000
#: times in a description, in seconds: a microsecond to about 31 years. Rates are then within
#: [1e-9, 1e9] per server, so that no ratio of two rates a solver sees comes near overflow
MIN_TIME = 1e-6
MAX_TIME = 1e9
#: constant rates and weights of a net (for example read from PNML), per second
MIN_RATE = 1e-12
MAX_RATE = 1e12
#: the largest |priority| of a phase or an instantaneous activity
MAX_PRIORITY = 1e6
#: the largest coefficient of variation of a lognormal task time
MAX_CV = 1e3
#: tokens one place may hold in a reachable marking: past it a net is taken as unbounded (the
#: engines keep counts in 32-bit integers, and a firing may add up to MAX_COUNT at once)
MAX_TOKENS = 1 << 30
#: XML elements of one PNML net (each costs a few hundred bytes while it is read)
MAX_XML_ELEMENTS = 1_000_000


def input_file(path, *, max_bytes: int, what: str, error=ModelError) -> Path:
    """``path`` as a :class:`Path` if it is a regular file of at most ``max_bytes``; else ``error``."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as err:
        raise error(f"{path}: cannot read it ({err.strerror or err})") from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{path}: is a directory (a {what} is read from a file)")
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{path}: not a regular file (a {what} is read from a file)")
    if info.st_size > max_bytes:
        raise error(f"{path}: {info.st_size:,} bytes, more than a {what} can be "
                    f"({max_bytes:,} bytes at most)")
    return path


def read_input(path, *, max_bytes: int, what: str, error=ModelError) -> bytes:
    """The bytes of ``path``, checked as :func:`input_file` does, and never more than ``max_bytes``.

    The file is opened without blocking and checked again once open, so that a file swapped
    for a named pipe (or one that grows) after the check cannot make the reader wait or read
    without end.
    """
    path = input_file(path, max_bytes=max_bytes, what=what, error=error)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise error(f"{path}: cannot read it ({err.strerror or err})") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error(f"{path}: not a regular file (a {what} is read from a file)")
        try:
            data = file.read(max_bytes + 1)
        except OSError as err:
            raise error(f"{path}: cannot read it ({err.strerror or err})") from None
    if len(data) > max_bytes:
        raise error(f"{path}: more than {max_bytes:,} bytes, more than a {what} can be")
    return data


def count(value, where: str, *, low: int = 0, high: int = MAX_COUNT, error=ModelError) -> int:
    """An integer count in ``[low, high]`` (a bool or a float with a fraction is refused).

    >>> count(4.0, "phases.map.tasks", low=1)
    4
    >>> count(1e30, "phases.map.tasks", low=1)
    Traceback (most recent call last):
    ...
    spn.exceptions.ModelError: phases.map.tasks: 1e+30 is more than 10,000,000
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"{where}: expected an integer, got {value!r}")
    if isinstance(value, float) and not (value == value and abs(value) != float("inf")):
        raise error(f"{where}: expected an integer, got {value!r}")
    if value > high:
        raise error(f"{where}: {value!r} is more than {high:,}")
    if value < low:
        raise error(f"{where}: {value!r} is less than {low:,}")
    if int(value) != value:
        raise error(f"{where}: expected an integer, got {value!r}")
    return int(value)


def available_memory() -> int:
    """Bytes this process may still allocate: the memory the system has available
    (``MemAvailable``, else the free pages), and no more than the address space left under
    ``RLIMIT_AS`` when one is set.

    >>> available_memory() > 0
    True
    """
    free = None
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError):
        pass
    if free is None:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            free = 1 << 62
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        free = min(free, max(0, soft - _address_space()))
    return free


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity: a container or ``taskset`` may allow fewer
    than the machine has).

    >>> available_cores() >= 1
    True
    """
    return len(os.sched_getaffinity(0))


def _address_space() -> int:
    """This process's virtual size in bytes (what RLIMIT_AS bounds)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0
