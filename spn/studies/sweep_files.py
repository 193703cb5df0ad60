"""The files of a sweep: the CSV written row by row, the record of what it was started with, resuming.

- :func:`check_outputs` looks at ``--out`` and ``--plot`` before anything is solved.
- :class:`SweepWriter` writes the CSV: a new one in a hidden temporary file that
  becomes ``--out`` with its first row (so a sweep that stops before solving
  anything leaves nothing behind, and an existing file is only ever replaced by
  one that holds a row), a resumed one by appending under an exclusive lock (two
  sweeps appending to one file would solve points twice).
- :class:`SweepRecord` is what the sweep was started with, kept in
  ``OUT.sweep.json`` beside the CSV (the CSV stays plain for pandas and
  spreadsheets); :func:`resume_rows` refuses to continue a file whose record,
  columns or points are not this sweep's, naming what differs.

>>> a = SweepRecord("m.yaml", "ab12", ("workload.users=2",), ("cluster.containers=1..3",), "g1", "auto", 1e-10,
...                 2_000_000, (), 20.0)
>>> b = dataclasses.replace(a, deadline=30.0, sets=())
>>> b.differences(a)
['--set workload.users=2 then, none now', '--deadline 20 then, 30 now']
"""

from __future__ import annotations

import csv
import dataclasses
import fcntl
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from spn.exceptions import ModelError

__all__ = ["SweepRecord", "SweepWriter", "check_outputs", "resume_rows", "csv_records", "record_path",
           "PLOT_FORMATS", "RESULT_COLUMNS", "TAIL_COLUMNS"]

#: the result columns of a sweep of one class, after the grid's (``spn.studies.plot`` finds the grid
#: columns before the first, which is also the first of a sweep over query classes)
RESULT_COLUMNS = ("mean_execution_time", "throughput", "utilization", "tangible_states", "transitions", "method",
                  "low", "high")
#: the last columns of every sweep
TAIL_COLUMNS = ("converged", "seconds", "error")

#: a line of a sweep CSV is a few hundred characters; a longer one means the file is something else
MAX_LINE = 1 << 20
#: the formats of --plot, chosen by its extension
PLOT_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg")


def record_path(out) -> str:
    """Where the record of the sweep writing ``out`` is kept."""
    return f"{out}.sweep.json"


# --------------------------------------------------------------------------- what a sweep was started with
@dataclass(frozen=True)
class SweepRecord:
    """What a sweep was started with: everything that changes its rows, and nothing else (not where
    the points run). ``description`` and ``grid_sha256`` are SHA-256 digests of the description
    after ``--set`` and of the grid's values (so ``1..3`` and ``1,2,3`` are the same grid).
    ``seed``, ``rel_precision`` and ``max_seconds`` are those of points that simulate (a sweep
    over query classes); None for one class, and then left out of the file, as before them."""

    model: str
    description: str
    sets: tuple
    grid: tuple
    grid_sha256: str
    method: str
    rtol: float
    max_states: int
    percentiles: tuple
    deadline: float | None
    seed: int | None = None
    rel_precision: float | None = None
    max_seconds: float | None = None

    @classmethod
    def of(cls, model, data, sets, grid_texts, grid, *, method, rtol, max_states, percentiles, deadline,
           seed=None, rel_precision=None, max_seconds=None):
        def number(x):
            return None if x is None else float(x)

        return cls(str(model), _digest(data), tuple(sets), tuple(str(g) for g in grid_texts), _digest(grid),
                   str(method), float(rtol), int(max_states), tuple(float(q) for q in percentiles),
                   number(deadline), None if seed is None else int(seed), number(rel_precision), number(max_seconds))

    def as_dict(self) -> dict:
        fields = {k: v for k, v in dataclasses.asdict(self).items() if v is not None or k not in _OPTIONAL}
        return {"spn_sweep": 1, **fields}

    @classmethod
    def read(cls, path) -> SweepRecord:
        """The record in ``path``; a :class:`ModelError` if it is not one."""
        from spn.limits import input_file

        input_file(path, max_bytes=64 << 20, what="sweep record")
        try:
            with open(path, encoding="utf-8") as file:
                data = json.load(file)
            fields = {f.name for f in dataclasses.fields(cls)}
            if not isinstance(data, dict) or data.get("spn_sweep") != 1 or \
                    not fields - _OPTIONAL <= set(data) - {"spn_sweep"} <= fields:
                raise ValueError("unexpected content")
            record = cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in fields})
            record._check_types()
            return record
        except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as error:
            raise ModelError(f"{path}: not the record of a sweep ({' '.join(str(error).split())[:80]})") from None

    def _check_types(self) -> None:
        """A TypeError unless every field has the type :meth:`of` gives it (the file may have been edited)."""
        number = (int, float)
        kinds = {"model": str, "description": str, "grid_sha256": str, "method": str, "rtol": number,
                 "max_states": int, "deadline": (*number, type(None)), "seed": (int, type(None)),
                 "rel_precision": (*number, type(None)), "max_seconds": (*number, type(None))}
        for name, kind in kinds.items():
            if not isinstance(getattr(self, name), kind) or isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} has the wrong type")
        for name, kind in (("sets", str), ("grid", str), ("percentiles", number)):
            items = getattr(self, name)
            if not isinstance(items, tuple) or not all(isinstance(x, kind) for x in items):
                raise TypeError(f"{name} has the wrong type")

    def differences(self, then: SweepRecord) -> list[str]:
        """What differs from the record ``then``, one phrase per option, as the user typed it."""
        out = []

        def differ(flag, old, new):
            out.append(f"{flag} {old if old not in ('', None) else 'none'} then, "
                       f"{new if new not in ('', None) else 'none'} now")

        if self.sets != then.sets:
            differ("--set", " ".join(then.sets), " ".join(self.sets))
        elif self.description != then.description:
            out.append(f"the model file {self.model} changed since the sweep started" if self.model == then.model
                       else f"the model: {then.model} then, {self.model} now, and their descriptions differ")
        if self.grid_sha256 != then.grid_sha256:
            differ("--grid", " ".join(then.grid), " ".join(self.grid))
        for flag, name in (("--method", "method"), ("--tol", "rtol"), ("--max-states", "max_states")):
            if getattr(self, name) != getattr(then, name):
                differ(flag, _show(getattr(then, name)), _show(getattr(self, name)))
        if self.percentiles != then.percentiles:
            differ("--percentiles", ",".join(map(_show, then.percentiles)), ",".join(map(_show, self.percentiles)))
        if self.deadline != then.deadline:
            differ("--deadline", _show(then.deadline), _show(self.deadline))
        for flag, name in (("--seed", "seed"), ("--rel-precision", "rel_precision"), ("--max-seconds", "max_seconds")):
            if getattr(self, name) != getattr(then, name):
                differ(flag, _show(getattr(then, name)), _show(getattr(self, name)))
        return out


#: the fields a record of a one-class sweep leaves out (as records written before them did)
_OPTIONAL = {"seed", "rel_precision", "max_seconds"}


def _show(value) -> str:
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _digest(value) -> str:
    """SHA-256 of a canonical JSON text of ``value`` (mapping keys sorted as text)."""

    def canonical(v):
        if isinstance(v, Mapping):
            return [[str(k), canonical(x)] for k, x in sorted(v.items(), key=lambda item: str(item[0]))]
        if isinstance(v, (list, tuple)):
            return [canonical(x) for x in v]
        return v

    text = json.dumps(canonical(value), default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- before anything is solved
def check_outputs(out, plot, *, resume: bool, force: bool) -> None:
    """Refuse an ``out`` or ``plot`` that cannot be written or may not be replaced (see the module docstring)."""
    from spn.io.output import check_target

    if os.path.exists(out) and os.path.isfile(out) and not resume and not force:
        raise ModelError(f"{out} exists: add --resume to continue that sweep, or --force to replace it")
    if not os.path.exists(out) and os.path.exists(record_path(out)) and not resume and not force:
        raise ModelError(f"{record_path(out)} exists (the record of a sweep whose CSV is gone, or another file): "
                         "add --force to replace it")
    check_target(out, force=True, what="sweep CSV")        # a folder, a device, a missing folder
    if plot is None:
        return
    if os.path.splitext(str(plot))[1].lstrip(".").lower() not in PLOT_FORMATS:
        raise ModelError(f"--plot {plot}: the format is chosen by the extension: "
                         + ", ".join(f".{f}" for f in PLOT_FORMATS))
    if os.path.abspath(plot) == os.path.abspath(out):
        raise ModelError(f"--plot and --out both name {out}")
    check_target(plot, force=force, what="plot")


# --------------------------------------------------------------------------- reading a sweep CSV
def csv_records(path):
    """``(header, records)`` of a CSV read line by line: ``records`` yields ``(line number, fields)``.

    A torn last line (no newline: a killed writer) is left out; a line longer than
    :data:`MAX_LINE`, text that is not UTF-8 or not CSV is a :class:`ModelError`.
    ``header`` is None for a file without a complete first line.
    """
    from spn.limits import input_file

    input_file(path, max_bytes=1 << 50, what="sweep CSV")     # a regular file: a pipe would block
    file = open(path, encoding="utf-8", newline="")

    def lines():
        number = 0
        with file:
            while True:
                try:
                    line = file.readline(MAX_LINE + 1)
                except UnicodeDecodeError:
                    raise ModelError(f"{path}, line {number + 1}: not UTF-8 text, so not a sweep CSV") from None
                if not line.endswith("\n"):
                    if len(line) > MAX_LINE:
                        raise ModelError(f"{path}, line {number + 1}: longer than {MAX_LINE:,} characters, "
                                         "so not a sweep CSV")
                    return
                number += 1
                try:
                    yield number, next(csv.reader([line]))
                except (csv.Error, StopIteration):
                    raise ModelError(f"{path}, line {number}: not a CSV row") from None

    records = lines()
    first = next(records, None)
    return (None if first is None else first[1]), records


def resume_rows(out, cols, grid, record: SweepRecord, grid_point) -> set[int]:
    """The points already in ``out``, after checking that it is this sweep's file (else a ModelError)."""
    if not os.path.exists(out):
        return set()                               # resuming a sweep that never wrote a row: start it
    header, records = csv_records(out)
    if header is None:                             # created, killed before the header: start again
        os.truncate(out, 0)
        return set()
    where = record_path(out)
    stored = SweepRecord.read(where) if os.path.exists(where) else None
    differences = record.differences(stored) if stored is not None else []
    why = f" ({'; '.join(differences)})" if differences else ""
    if header != cols:
        raise ModelError(f"{out} was written by another sweep" + (why or f" (its columns are {','.join(header)}; "
                         f"this sweep's are {','.join(cols)})") + ": write to another file, or replace it")
    paths = [p for p, _ in grid]
    size = 1
    for _, values in grid:
        size *= len(values)
    done = set()
    for n, fields in records:
        row = dict(zip(header, fields))
        try:
            index = int(row["point"])
        except (TypeError, ValueError):
            raise ModelError(f"{out}, line {n}: point {row.get('point')!r} is not an integer") from None
        if len(fields) != len(cols) or not 0 <= index < size or \
                tuple(row[p] for p in paths) != grid_point(grid, index):
            raise ModelError(f"{out}, line {n}: point {index} is not a point of this grid{why} "
                             f"(write to another file, or replace it)")
        done.add(index)
    if stored is None:
        raise ModelError(f"{out}: its record {where} is missing, so spn cannot check that it is this sweep; "
                         "restore it, or start again with --force")
    if differences:
        raise ModelError(f"{out} was started with other settings: {'; '.join(differences)}. Resume with the same "
                         f"ones, write to another --out, or start again with --force")
    # drop a torn last line so that appended rows start on a line of their own
    with open(out, "rb+") as file:
        data = file.read()
        if data and not data.endswith(b"\n"):
            file.truncate(data.rfind(b"\n") + 1)
    return done


# --------------------------------------------------------------------------- writing
class SweepWriter:
    """The CSV ``out`` of a sweep, written one flushed row at a time (see the module docstring)."""

    def __init__(self, out, header: str, record: SweepRecord, *, append: bool, force: bool):
        self.out, self.header, self.record, self.append, self.force = str(out), header, record, append, force
        self.file = self.temporary = None
        self.published = append

    def __enter__(self):
        from spn.io.output import temporary_beside

        if self.append:
            self.file = open(self.out, "a", newline="", encoding="utf-8")
            try:
                fcntl.flock(self.file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.file.close()
                raise ModelError(f"{self.out}: another spn sweep is writing it; resume once it has ended") from None
        else:
            self.temporary = temporary_beside(self.out)
            self.file = open(self.temporary, "w", newline="", encoding="utf-8")
            self.file.write(self.header)
        return self

    def write(self, line: str) -> None:
        """Append one row (one write, then flushed: a kill loses no finished row)."""
        restart = self.append and os.fstat(self.file.fileno()).st_size == 0     # emptied by resume_rows
        if restart:
            self.file.write(self.header)
        self.file.write(line)
        self.file.flush()
        if not self.published:
            self._publish()
        elif restart:
            self._write_record()

    def _publish(self) -> None:
        """The first row is on disk: the CSV takes its place, then its record.

        In this order a crash in between leaves a CSV without its record (or with the
        record of the file it replaced), which --resume refuses; the other order could
        pair an old CSV with a new record and let --resume mix two sweeps.
        """
        from spn.io.output import publish

        os.fsync(self.file.fileno())
        publish(self.temporary, self.out, force=self.force)
        self.published = True
        self._write_record()

    def _write_record(self) -> None:
        from spn.io.output import atomic_output

        with atomic_output(record_path(self.out), force=True) as file:
            json.dump(self.record.as_dict(), file, indent=1)
            file.write("\n")

    def __exit__(self, kind, error, trace):
        from spn.io.output import discard

        try:
            if self.published:
                self.file.flush()
                os.fsync(self.file.fileno())
        finally:
            self.file.close()
            if not self.published:
                discard(self.temporary)
        return False
