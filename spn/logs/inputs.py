"""What a command may be given as its logs, resolved to local log paths: files, folders, History Servers.

An item of ``resolve_inputs(items)`` is one of:

- a log: a file (plain or compressed in any codec Spark writes, or a MapReduce
  ``.jhist``) or a rolling ``eventlog_v2_*`` folder, taken as it is; another file
  (a model description) passes through untouched, for the commands that take either;
- a folder of logs (``spark.eventLog.dir``): every log in it, plain, compressed or
  rolling; a log still being written (``.inprogress``, or a rolling folder whose
  ``appstatus_*`` marker ends so), a file whose first line is no event (a README)
  and other folders are left out with a note, hidden files (Hadoop's ``.crc``) silently;
- a Spark History Server, ``http://host:18080`` (:mod:`spn.logs.history_server`): the
  applications it lists, or one application, named by ``app_id`` or by the URL
  of its page (``.../history/<app-id>``, ``.../api/v1/applications/<app-id>``). Each
  log is downloaded into a temporary folder, streamed, and the folder is removed
  when the ``with`` block ends, whatever happens inside it.

Folders and servers are filtered by ``app_name`` (exact, or a glob: ``"q26*"``),
``app_id``, ``status`` (``completed``, the default, ``running`` or ``any``),
``since``/``until`` (the application's start) and ``limit`` (the newest N), and
their logs are ordered by start time. A command that models one application asks
with ``single=True``: then a folder or a listing that holds several application
names is refused, naming them, before anything is downloaded.

>>> import os, shutil, tempfile
>>> folder = tempfile.mkdtemp()
>>> with open(os.path.join(folder, "app-1"), "w") as log:
...     _ = log.write('{"Event": "SparkListenerApplicationStart", "App Name": "q26", "App ID": "app-1", '
...                   '"Timestamp": 1000, "User": "u"}\\n')
>>> with open(os.path.join(folder, "app-2.inprogress"), "w") as log:
...     _ = log.write("")
>>> with resolve_inputs([folder]) as inputs:
...     [(os.path.basename(log.path), log.app_name) for log in inputs.logs], len(inputs.notes)
([('app-1', 'q26')], 1)
>>> shutil.rmtree(folder)
"""

from __future__ import annotations

import contextlib
import datetime
import fnmatch
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from spn.exceptions import LogFormatError
from spn.logs import history_server
from spn.logs.history_server import DEFAULT_TIMEOUT
from spn.logs.runs import log_kind
from spn.logs.spark_files import read_events

__all__ = ["LogInput", "Inputs", "resolve_inputs", "STATUSES"]

#: what ``status`` may be: an application that ended, one still running, or either
STATUSES = ("completed", "running", "any")
#: events read from the head of a log to find its ApplicationStart (Spark writes it among the first few)
_HEAD_EVENTS = 200


@dataclass(frozen=True)
class LogInput:
    """One log to read: where it is now, where it came from, and the application it holds (when looked up)."""

    path: Path
    source: str                     # the item it came from: the path given, or the server's URL
    app_id: str | None = None
    app_name: str | None = None
    start_ms: int | None = None


@dataclass
class Inputs:
    """The resolved logs, in order, and the notes about what was left out or fetched."""

    logs: list[LogInput] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return [str(log.path) for log in self.logs]

    @property
    def origins(self) -> list[str]:
        """Where each log came from, for a model's provenance: its path, or its application's URL at
        the History Server (a download's temporary path means nothing once the command has ended)."""
        return [str(log.path) if log.app_id is None or log.source == str(log.path) or "://" not in log.source
                else f"{log.source.rstrip('/')}/api/v1/applications/{log.app_id}" for log in self.logs]

    def groups(self) -> dict:
        """The logs by application name (``None`` for a file given by itself), in order of first appearance."""
        grouped: dict = {}
        for log in self.logs:
            grouped.setdefault(log.app_name, []).append(log)
        return grouped


@contextlib.contextmanager
def resolve_inputs(items: Sequence, *, app_name: str | None = None, app_id: Sequence[str] = (),
                   status: str = "completed", since: str | None = None, until: str | None = None,
                   limit: int | None = None, timeout: float = DEFAULT_TIMEOUT,
                   single: bool = False) -> Iterator[Inputs]:
    """The logs ``items`` name, resolved (see the module doc); temporary downloads removed on exit.

    Raises :class:`~spn.exceptions.LogFormatError` for an item that does not exist,
    a folder or server with no matching log, a server that cannot be read (naming the
    URL), and with ``single=True`` a folder or server listing several applications.
    """
    if status not in STATUSES:
        raise LogFormatError(f"status {status!r}: expected one of {', '.join(STATUSES)}", option="status")
    filters = _Filters(app_name, tuple(app_id), status, _moment(since, "--since"), _moment(until, "--until"),
                       limit)
    if not items:
        raise LogFormatError("give at least one log, folder of logs or History Server URL")
    with contextlib.ExitStack() as stack:
        inputs = Inputs()
        downloads = None
        for item in items:
            server = history_server.server_url(str(item))
            if server is not None:
                if downloads is None:
                    downloads = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="spn-logs-")))
                _from_server(server, filters, inputs, downloads, timeout=timeout, single=single)
            else:
                _from_path(Path(item), filters, inputs, single=single)
        yield inputs


@dataclass(frozen=True)
class _Filters:
    app_name: str | None
    app_ids: tuple
    status: str
    since_ms: int | None
    until_ms: int | None
    limit: int | None

    def name_matches(self, name: str | None) -> bool:
        if self.app_name is None:
            return True
        return name is not None and (name == self.app_name or fnmatch.fnmatchcase(name, self.app_name))

    def matches(self, app_id, name, start_ms) -> bool:
        if self.app_ids and app_id not in self.app_ids:
            return False
        if not self.name_matches(name):
            return False
        if self.since_ms is not None and (start_ms is None or start_ms < self.since_ms):
            return False
        return self.until_ms is None or (start_ms is not None and start_ms <= self.until_ms)

    def said(self) -> str:
        given = [f"--app-name {self.app_name!r}" if self.app_name else "",
                 " ".join(f"--app-id {i}" for i in self.app_ids), f"--status {self.status}",
                 "--since" if self.since_ms is not None else "", "--until" if self.until_ms is not None else ""]
        return ", ".join(text for text in given if text)


def _moment(text, what: str):
    if text is None:
        return None
    return round(history_server.parse_date(str(text), what).timestamp() * 1000)


def _from_path(path: Path, filters: _Filters, inputs: Inputs, *, single: bool) -> None:
    """A file or rolling log as it is; a folder of logs expanded and filtered."""
    if not path.is_dir() or path.name.startswith("eventlog_v2_"):
        # as it is, even when missing: its reader names the problem the way it names others
        inputs.logs.append(LogInput(path, str(path)))
        return
    found, skipped = [], []
    for entry in sorted(path.iterdir()):
        if entry.name.startswith("."):
            continue                    # Hadoop's checksums (.name.crc), editors' files
        if entry.is_dir() and not entry.name.startswith("eventlog_v2_"):
            skipped.append(f"{entry.name} (a folder, not a rolling event log)")
            continue
        running = _in_progress(entry)
        if (filters.status == "completed" and running) or (filters.status == "running" and not running):
            if running:
                skipped.append(f"{entry.name} (still being written: the application has not finished)")
            continue
        head = _head(entry)
        if head is None:
            skipped.append(f"{entry.name} (not an event log)")
            continue
        app_id, name, start_ms = head
        if filters.matches(app_id, name, start_ms):
            found.append(LogInput(entry, str(path), app_id, name, start_ms))
    left_out = f"left out {', '.join(skipped)}" if skipped else ""
    if not found:
        raise LogFormatError(f"{path}: no event log in this folder matches ({filters.said()})"
                             + (f"; {left_out}" if left_out else ""),
                             option="app_name" if filters.app_name else None)
    if left_out:
        inputs.notes.append(f"{path}: {left_out}")
    found.sort(key=lambda log: (log.start_ms is None, log.start_ms or 0, str(log.path)))
    if filters.limit is not None:
        found = found[-filters.limit:]
    if single:
        _one_application(str(path), [(log.app_name, log.app_id) for log in found])
    inputs.logs.extend(found)


def _in_progress(entry: Path) -> bool:
    """A log still being written: ``NAME.inprogress``, or a rolling folder with ``appstatus_*.inprogress``."""
    if entry.is_dir():
        return any(marker.name.endswith(".inprogress") for marker in entry.glob("appstatus_*"))
    return entry.name.endswith(".inprogress")


def _head(path: Path):
    """``(application id, name, start in epoch ms)`` from a log's ApplicationStart (``None``s where it has none,
    as a .jhist), or ``None`` when ``path`` is no log at all: its first line is not an event."""
    seen = False
    try:
        if log_kind(path) != "spark":
            return None, None, None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # a cut-off last line is reported when the log is read
            events = read_events(path)
            try:
                for count, (_, _, event) in enumerate(events):
                    seen = True
                    if event["Event"] == "SparkListenerApplicationStart":
                        start = event.get("Timestamp")
                        return (_text(event.get("App ID")), _text(event.get("App Name")),
                                start if isinstance(start, int) else None)
                    if count >= _HEAD_EVENTS:
                        break
            finally:
                events.close()
    except LogFormatError:
        if seen:
            raise
        return None
    return None, None, None


def _text(value):
    return value if isinstance(value, str) else None


def _from_server(server, filters: _Filters, inputs: Inputs, downloads: Path, *, timeout: float,
                 single: bool) -> None:
    """The applications a History Server lists (or the one named), each log downloaded under ``downloads``."""
    base, url_app, url_attempt = server
    if url_app is not None or filters.app_ids:
        apps = [history_server.application(base, app, timeout=timeout) for app in ((url_app,) if url_app
                                                                                    else filters.app_ids)]
        if url_attempt is not None:
            apps = [history_server.Application(apps[0].id, apps[0].name, url_attempt, apps[0].completed,
                                               apps[0].start_ms)]
    else:
        # the server filters by status and date; a name is filtered here, so the limit is applied after it
        listed = history_server.list_applications(
            base, status=None if filters.status == "any" else filters.status,
            since=_utc(filters.since_ms), until=_utc(filters.until_ms),
            limit=filters.limit if filters.app_name is None else None, timeout=timeout)
        apps = [app for app in listed if filters.name_matches(app.name)]
        if not apps:
            names = sorted({app.name for app in listed})
            shown = ", ".join(repr(name) for name in names[:10]) + (", ..." if len(names) > 10 else "")
            raise LogFormatError(f"{base}: no application matches ({filters.said()}); it lists "
                                 f"{len(listed)} application(s)" + (f": {shown}" if names else ""),
                                 option="app_name" if filters.app_name else None)
        apps.sort(key=lambda app: (app.start_ms or 0, app.id), reverse=True)
        if filters.limit is not None:
            apps = apps[:filters.limit]
        apps.reverse()                  # oldest first, as a folder's logs
    if single:
        _one_application(base, [(app.name, app.id) for app in apps])
    for app in apps:
        folder = tempfile.mkdtemp(prefix="app-", dir=downloads)
        for path in history_server.download_log(base, app, folder, timeout=timeout):
            inputs.logs.append(LogInput(path, base, app.id, app.name, app.start_ms))
    inputs.notes.append(f"{base}: fetched {len(apps)} application log(s): "
                        + ", ".join(f"{app.id} ({app.name})" for app in apps[:10])
                        + (", ..." if len(apps) > 10 else ""))


def _utc(ms):
    return None if ms is None else datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)


def _one_application(where: str, apps) -> None:
    """Refuse logs of several application names: a model is of one application (``apps``: (name, id) pairs)."""
    names: dict = {}
    for name, app_id in apps:
        names.setdefault(name, []).append(app_id)
    if len(names) > 1:
        listed = "; ".join(f"{name!r}: {len(ids)} run(s)" for name, ids in list(names.items())[:10])
        raise LogFormatError(f"{where}: logs of {len(names)} applications ({listed}); a model is of one: "
                             "choose it by name (or by --app-id)", option="app_name")
