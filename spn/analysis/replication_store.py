"""The replications of the cluster simulator that measured X(k), kept on disk: asked again (another number
of users or think time, another command, a plan's next probe), X(k) is read back instead of simulated.

A replication is a pure function of the simulator's tables (the job, the cluster, the policy, k users),
its random stream, warm-up and length, and the code and library versions that ran it: all of it is the
key, so what is read back is, bit for bit, what the simulation would give (a JSON float reads back
exactly). One file per simulator, seed and k, in ``$SPN_CACHE_DIR`` (default
``$XDG_CACHE_HOME/spn/replications``, else ``~/.cache/spn/replications``); ``SPN_CACHE_DIR=off`` keeps
nothing. A store that cannot be read or written is as if empty: it never stops an answer.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     ReplicationStore(folder, "ab12").put("pilot:6:10", [Kept(1.5, 2.0, 10, 400)])
...     print(ReplicationStore(folder, "ab12").get("pilot:6:10"), ReplicationStore(folder, "cd34").get("pilot:6:10"))
[Kept(busy_area=1.5, duration=2.0, completions=10, events=400)] None
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import NamedTuple

__all__ = ["Kept", "ReplicationStore", "store_for", "store_folder"]

_SOURCES = ("simulation/cluster_kernel.py", "simulation/cluster_compiled.py")


class Kept(NamedTuple):
    """What X(k) reads of a replication (:class:`~spn.simulation.cluster.ClusterReplication`'s fields)."""

    busy_area: float
    duration: float
    completions: int
    events: int


def store_folder() -> Path | None:
    """Where the replications are kept (None: ``SPN_CACHE_DIR=off``)."""
    folder = os.environ.get("SPN_CACHE_DIR")
    if folder == "off":
        return None
    if folder:
        return Path(folder)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "spn" / "replications"


def store_for(sim, entropy, k: int) -> ReplicationStore | None:
    """The store of ``sim``'s (a :class:`~spn.simulation.cluster_compiled.CompiledClusterSimulator` of k
    users) replications from the seed's ``entropy``; None where nothing is kept."""
    folder = store_folder()
    if folder is None:
        return None
    key = hashlib.sha256(_code_version().encode())
    key.update(json.dumps([list(map(int, sim._config)), float(sim.think_time), str(entropy), k]).encode())
    for table in sim._tables:
        key.update(f"{table.dtype.str}{table.shape}".encode())
        key.update(table.tobytes())
    return ReplicationStore(folder, key.hexdigest()[:32])


class ReplicationStore:
    """The kept replications of one simulator, seed and k: ``get(name)`` / ``put(name, [Kept, ...])``,
    ``name`` the stream, warm-up and length (``long:3:40:80``); safe from several threads."""

    def __init__(self, folder, key: str):
        self.folder, self.path = Path(folder), Path(folder) / f"{key}.json"
        self._lock = threading.Lock()
        try:
            self._kept = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self._kept = {}
        if not isinstance(self._kept, dict):
            self._kept = {}

    def get(self, name: str) -> list | None:
        rows = self._kept.get(name)
        try:
            return None if rows is None else [Kept(float(a), float(d), int(c), int(e)) for a, d, c, e in rows]
        except (TypeError, ValueError):
            return None

    def put(self, name: str, replications: list) -> None:
        with self._lock:
            self._kept[name] = [list(r) for r in replications]
            text = json.dumps(self._kept)
            out = None
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                # a whole file or none: another process reading it never sees half of one
                with tempfile.NamedTemporaryFile("w", dir=self.folder, suffix=".tmp", delete=False) as out:
                    out.write(text)
                os.replace(out.name, self.path)
            except OSError:
                if out is not None:
                    Path(out.name).unlink(missing_ok=True)


def _code_version() -> str:
    """The simulator's sources and the versions of what runs it (Numba compiles its random draws)."""
    global _VERSION
    if _VERSION is None:
        here = Path(__file__).resolve().parents[1]
        key = hashlib.sha256()
        for source in _SOURCES:
            key.update((here / source).read_bytes())
        for package in ("numba", "numpy"):
            try:
                key.update(importlib.metadata.version(package).encode())
            except importlib.metadata.PackageNotFoundError:
                pass
        _VERSION = key.hexdigest()
    return _VERSION


_VERSION: str | None = None
