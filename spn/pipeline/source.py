"""From what the user has to one configuration: a description file, or logs plus what-if settings.

Every command starts here, so that a setting means the same thing everywhere:

- a model description (a path to a .yaml/.yml/.json description, a mapping, or a
  parsed :class:`~spn.description.model.Description`) takes ``--set`` paths
  (``workload.users=5``, ``cluster.containers=8``);
- execution logs (Spark event logs, MapReduce .jhist) are fitted by :func:`spn.fit.fit_logs`;
  Spark's configuration keys (``spark.executor.instances=12``, ``input-size=10GB``, the keys of
  :data:`spn.fit.whatif.KEYS`) apply the what-if rules to the pilot's tasks, ``workload.users``
  and ``workload.think_time`` describe the workload, and any other path is a ``--set`` on the
  fitted description.

Erlang shapes are fitted up to one cap everywhere (:data:`spn.limits.MAX_SHAPE`, what the data ask
for), so the same logs give the same model whichever command fits them.

>>> desc = configure("models/mapreduce.yaml", ["workload.users=5"])
>>> desc.workload.users, desc.cluster.containers
(5, 4)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from spn.exceptions import ModelError

__all__ = ["configure", "is_description_file", "split_settings"]

#: the suffixes of model description files; any other file is read as an execution log
DESCRIPTION_SUFFIXES = (".yaml", ".yml")
#: spn's own what-if keys beside Spark's (``spark.*``); :data:`spn.fit.whatif.KEYS` checks them all
#: (known here by name, so that a description file's settings never load the fitting code)
WHAT_IF_KEYS = ("input-size", "hosts", "executor-cpus")
#: settings of a log source that describe the workload (fit_logs takes them), not the fitted model
WORKLOAD_KEYS = ("workload.users", "workload.think_time")


def is_description_file(path) -> bool:
    """A .yaml/.yml file, or a .json file holding one object with ``phases`` (a Spark event log
    is JSON too, one event per line).

    >>> is_description_file("models/mapreduce.yaml"), is_description_file("app-1234.lz4")
    (True, False)
    """
    path = Path(path)
    if path.is_dir():       # Spark 3's rolling event log is a folder; any other is refused as a description
        return not path.name.startswith("eventlog_v2_")
    suffix = path.suffix.lower()
    if suffix in DESCRIPTION_SUFFIXES:
        return True
    if suffix != ".json":
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return True         # let the description reader name the problem
    first = head.split(b"\n", 1)[0]
    return b'"Event"' not in first      # an event log's first line is an event


def split_settings(settings: Sequence[str]) -> tuple[dict, dict, list[str]]:
    """``KEY=VALUE`` items as (what-if changes, workload settings, ``--set`` paths).

    >>> split_settings(["spark.executor.instances=12", "workload.users=2", "cluster.containers=4"])
    ({'spark.executor.instances': '12'}, {'workload.users': '2'}, ['cluster.containers=4'])
    """
    what_if, workload, sets = {}, {}, []
    for item in settings:
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep:
            sets.append(str(item))      # the description's own reader names the problem (expected PATH=VALUE)
            continue
        if key.startswith("spark.") or key in WHAT_IF_KEYS:
            what_if[key] = value.strip()        # checked by spn.fit.whatif.parse_changes
        elif key in WORKLOAD_KEYS:
            workload[key] = value.strip()
        else:
            sets.append(str(item))
    return what_if, workload, sets


def configure(source, settings: Sequence[str] = (), *, name: str | None = None):
    """The :class:`~spn.description.model.Description` that ``source`` with ``settings`` describes.

    ``source``: a description (path, mapping or parsed), or a sequence of log paths (one
    path that is not a description file is a log too). ``settings``: ``KEY=VALUE`` items
    (see the module doc). Raises :class:`~spn.exceptions.ModelError` for a bad setting,
    naming it; a Spark key on a description file is refused (it needs a pilot's log).
    """
    from spn.description import load_description, parse_description
    from spn.description.model import Description

    settings = list(settings)
    if isinstance(source, Description):
        if settings:
            raise ModelError("settings apply to a description file or mapping, not to a parsed Description",
                             option="set")
        return source
    if isinstance(source, Mapping):
        return parse_description(dict(source), settings)
    paths = [source] if isinstance(source, (str, Path)) else list(source)
    if len(paths) == 1 and is_description_file(paths[0]):
        what_if, _, _ = split_settings(settings)
        if what_if:
            raise ModelError(f"{', '.join(what_if)}: a Spark setting applies the what-if rules to a pilot's "
                             f"tasks, so it needs the pilot's log, not a description ({paths[0]})", option="set")
        return load_description(paths[0], settings)
    return fitted(paths, settings, name=name)


def fitted(logs: Sequence, settings: Sequence[str] = (), *, name: str | None = None):
    """The description fitted from ``logs`` at the configuration ``settings`` name (see :func:`configure`)."""
    from spn.description import parse_description
    from spn.description.overrides import apply_overrides
    from spn.fit import fit_logs
    from spn.limits import MAX_SHAPE

    what_if, workload, sets = split_settings(settings)
    users = _number(workload, "workload.users", int)
    think_time = _number(workload, "workload.think_time", float)
    # evaluated, never written: testing the laws' goodness of fit would change no number it gives
    model = fit_logs(logs, what_if=what_if or None, max_shape=MAX_SHAPE, users=users, think_time=think_time,
                     name=name, test_laws=False)
    data = apply_overrides(model.description, sets) if sets else model.description
    return parse_description(data, source=str(logs[0]))


def _number(settings: dict, key: str, kind):
    if key not in settings:
        return None
    try:
        return kind(settings[key])
    except ValueError:
        raise ModelError(f"{key}={settings[key]!r}: not a number", option="set") from None
