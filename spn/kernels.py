"""Compiled kernels: compiled once per installation, never while a user waits.

The compiled exploration engine (:mod:`spn.statespace.compiled`) is a Numba
kernel. Compiling it takes 10-20 s of CPU; Numba then caches the machine code
on disk, and later processes load it in about 0.3 s. Until this installation
has compiled it (:func:`ready`), :func:`spn.statespace.explore` takes the
NumPy engine, which builds the same chain, and :func:`warm_in_background`
compiles the kernel in a separate process, so the next large model finds it
ready. (The Gauss-Seidel/SOR sweep of :mod:`spn.solvers.steady.stationary`
has one fixed signature and compiles in under half a second: it needs none of this.)

The compiled cluster simulator (:mod:`spn.simulation.cluster_compiled`) is a second
group, ``cluster``, with its own stamp: each group is ready when its own sources are
compiled (``ready("cluster")``). A simulation takes the Python engine until then; the
decomposition (:mod:`spn.analysis.decomposition`), whose models are the large ones, waits for its
compilation in the background instead (about 7 s; the paper's scale answered in 8 s on a fresh
installation, where the Python engine took 30 s).

``python -m spn.kernels`` compiles them in the foreground (useful after an install);
``python -m spn.kernels cluster`` one group. One process at a time compiles a group: a process that
needs the kernels while another compiles them waits for it (:func:`await_other`) and loads its code,
rather than compile the same code on the other core and race it to Numba's cache.

>>> isinstance(ready(), bool)
True
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import subprocess
import sys
import time
from pathlib import Path

#: a warming process started less than this long ago (s) is not started again
WARMING_PATIENCE = 600.0

_PACKAGE = Path(__file__).parent
#: group -> (the sources its machine code is compiled from, the name of its stamp)
GROUPS = {
    "explore": ((_PACKAGE / "statespace" / "compiled.py", _PACKAGE / "statespace" / "compiled_choices.py",
                 _PACKAGE / "statespace" / "compiled_gates.py", _PACKAGE / "statespace" / "compiled_landing.py",
                 _PACKAGE / "statespace" / "activity_table.py", _PACKAGE / "statespace" / "compiled_generator.py"),
                "spn-kernels"),
    "cluster": ((_PACKAGE / "simulation" / "cluster_kernel.py",), "spn-cluster-kernels"),
}


def _cache_dir() -> Path:
    """Where Numba keeps the cache of these kernels, and so where their stamp goes."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    if os.access(_PACKAGE, os.W_OK):             # Numba caches in the __pycache__ beside the source
        return _PACKAGE / "__pycache__"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "spn"


def stamp_path(group: str = "explore") -> Path:
    """The file whose existence says "compiled": its name hashes Numba's and Python's versions and
    the kernels' sources (content, size and modification time, which Numba's cache also checks)."""
    sources, name = GROUPS[group]
    key = hashlib.sha256()
    try:
        key.update(importlib.metadata.version("numba").encode())
    except importlib.metadata.PackageNotFoundError:
        pass
    key.update(sys.version.encode())
    for source in sources:
        if source.exists():
            stat = source.stat()
            key.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
            key.update(source.read_bytes())
    return _cache_dir() / f"{name}-{key.hexdigest()[:16]}.ready"


def ready(group: str = "explore") -> bool:
    """Have the kernels been compiled and cached for this installation?"""
    return stamp_path(group).exists()


def mark_ready(group: str = "explore") -> None:
    """Record that the kernels are compiled (called after a compiled run or a warm-up)."""
    try:
        path = stamp_path(group)
        path.parent.mkdir(parents=True, exist_ok=True)
        for old in path.parent.glob(f"{GROUPS[group][1]}-*"):   # stamps of earlier sources or versions
            if old.stem != path.stem:
                old.unlink(missing_ok=True)
        path.touch()
    except OSError:                                # a read-only installation: compile when used
        pass


def warm_in_background(group: str = "explore") -> None:
    """Start one detached process that compiles the kernels, unless one started recently."""
    marker = _marker(group)
    try:
        if marker.exists() and time.time() - marker.stat().st_mtime < WARMING_PATIENCE:
            return
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        process = subprocess.Popen([sys.executable, "-m", "spn.kernels", group], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        marker.write_text(str(process.pid))
    except OSError:
        pass


def compiling_elsewhere(group: str = "explore") -> bool:
    """Is another process compiling ``group`` now? (Its process id is in the group's marker, which it
    deletes when done; a marker older than :data:`WARMING_PATIENCE` or of a process gone is not believed.)

    >>> compiling_elsewhere("cluster") in (True, False)
    True
    """
    marker = _marker(group)
    try:
        pid = int(marker.read_text() or 0)
        fresh = time.time() - marker.stat().st_mtime < WARMING_PATIENCE
    except (OSError, ValueError):
        return False
    if not fresh or pid in (0, os.getpid()):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:                                 # alive, another user's
        pass
    return True


def await_other(group: str = "explore", *, until: float | None = None, message: str | None = None) -> None:
    """Where another process is compiling ``group``, wait until it is done (or the :func:`time.perf_counter`
    instant ``until``) and then load its code, rather than compile the same code beside it on the
    other core and race it to Numba's cache. ``message`` is printed on stderr (a terminal only) if it waits."""
    while not ready(group) and compiling_elsewhere(group):
        if until is not None and time.perf_counter() >= until:
            return
        if message and sys.stderr.isatty():
            print(f"spn: {message}", file=sys.stderr, flush=True)
            message = None
        time.sleep(0.2)


def wait_ready(group: str = "explore", *, until: float, message: str | None = None) -> bool:
    """Wait for a background compilation of ``group`` until the :func:`time.perf_counter` value ``until``;
    whether the kernels are ready. ``message`` is printed on stderr (a terminal only) while waiting.

    >>> wait_ready(until=time.perf_counter()) in (True, False)
    True
    """
    if message and sys.stderr.isatty() and not ready(group):
        print(f"spn: {message}", file=sys.stderr, flush=True)
    while not ready(group):
        if time.perf_counter() >= until:
            return False
        time.sleep(0.2)
    return True


def warm(group: str = "explore") -> None:
    """Compile a group's kernels (or load them from Numba's cache), and record it. While it compiles, its
    process id is in the group's marker, so that other processes wait for it (:func:`await_other`)."""
    await_other(group)
    marker = _marker(group)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(str(os.getpid()))
    except OSError:
        pass
    try:
        if not ready(group):
            _clear_cache(group)
        if group == "cluster":
            from spn.simulation import cluster_compiled

            cluster_compiled.warm()
        else:
            _warm_explore()
        mark_ready(group)
    finally:
        try:
            marker.unlink(missing_ok=True)
        except OSError:
            pass


def _marker(group: str) -> Path:
    """The file that says a process is compiling ``group``: it holds that process's id."""
    return stamp_path(group).with_suffix(".warming")


def _clear_cache(group: str) -> None:
    """Delete Numba's cached machine code of a group's sources. Numba checks only the file a function is
    in, so a kernel calling into another file (compiled.py into compiled_gates.py) would load its old
    code after that file changed; the stamp covers every file, and a changed stamp clears them all."""
    dirs = [source.parent / "__pycache__" for source in GROUPS[group][0]]
    if os.environ.get("NUMBA_CACHE_DIR"):
        dirs.append(Path(os.environ["NUMBA_CACHE_DIR"]))
    for source in GROUPS[group][0]:
        for folder in dirs:
            for cached in list(folder.rglob(f"{source.stem}.*.nbi")) + list(folder.rglob(f"{source.stem}.*.nbc")):
                cached.unlink(missing_ok=True)


def _warm_explore() -> None:
    """The exploration kernel for the marking widths nets usually need: one byte per place, and
    two (a place that holds more than 127 tokens); without choice gates and with them (a kernel
    of its own: the plain one is compiled without the gates' code); and the pass that builds the
    generator of its chains (:mod:`spn.statespace.compiled_generator`)."""
    from spn.net import InputGate, InstantActivity, Net, Place, TimedActivity
    from spn.net.choice import Candidate, ChoiceGate
    import numpy as np

    from spn.statespace import compiled, compiled_generator

    compiled_generator.generator(2, np.array([0, 1], np.int32), np.array([1, 0], np.int32), np.ones(2))
    for tokens in (1, 200):
        for gates in ((), (InputGate(ChoiceGate((Candidate(key=(("busy", 1),)),), chosen=0)),)):
            compiled.explore_plain(Net([Place("idle", tokens), Place("ready"), Place("busy")], [
                TimedActivity("arrive", inputs={"idle": 1}, outputs={"ready": 1}, rate=1.0),
                InstantActivity("start", inputs={"ready": 1}, outputs={"busy": 1}, input_gates=gates),
                InstantActivity("skip", inputs={"ready": 1}, outputs={"idle": 1}, weight=0.5),
                TimedActivity("serve", inputs={"busy": 1}, outputs={"idle": 1}, rate=2.0)]), max_states=1000)


if __name__ == "__main__":
    for name in sys.argv[1:] or GROUPS:
        warm(name)
