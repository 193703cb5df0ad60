"""A Spark History Server through its REST API (v1): list applications, fetch one's event log.

The server (``org.apache.spark.deploy.history.HistoryServer``, port 18080 by
default) answers ``GET /api/v1/applications`` with a JSON list of applications
(``status``, ``minDate``, ``maxDate`` and ``limit`` filter it there) and
``GET /api/v1/applications/<app-id>[/<attempt-id>]/logs`` with a zip of the
event log files as Spark wrote them (compressed or not, a rolling
``eventlog_v2_*`` folder or one file). The archive is streamed to a file and
unpacked next to it, never held in memory; the logs are read from there like any
other (:mod:`spn.logs.lines`).

HTTP goes through the standard library (``urllib.request``): four GET requests
need no other package, and its ``timeout`` bounds connecting and every read. A
server that is down, that stays silent longer than the timeout, that answers with
an HTTP error, with something that is not the API's JSON (an HTML page: a proxy's
login, a wrong port) or with an archive that holds no event log is a
:class:`~spn.exceptions.LogFormatError` naming the URL and what went wrong.

>>> server_url("http://host:18080/history/app-20161116163331-0000/jobs/")
('http://host:18080', 'app-20161116163331-0000', None)
>>> server_url("https://gateway/shs/api/v1/applications/application_1_0001/2/logs")
('https://gateway/shs', 'application_1_0001', '2')
>>> server_url("eventlogs/app-1.zstd") is None
True
"""

from __future__ import annotations

import datetime
import json
import re
import shutil
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from spn.exceptions import LogFormatError

__all__ = ["Application", "DEFAULT_TIMEOUT", "server_url", "list_applications", "application", "download_log",
           "parse_date"]

#: seconds to wait for the server to connect or to send the next bytes
DEFAULT_TIMEOUT = 30.0
#: the most bytes of JSON a listing may take (some 200,000 applications)
MAX_LISTING_BYTES = 64 << 20
_CHUNK = 1 << 20
_APP_PATH = re.compile(r"^(?P<base>.*?)/(?:history|api/v1/applications)/(?P<app>[^/]+)(?:/(?P<rest>.*))?$")
_ATTEMPT = re.compile(r"^\d+$")


@dataclass(frozen=True)
class Application:
    """One application the server lists: its id, name and the attempt whose log to fetch."""

    id: str
    name: str
    attempt: str | None     # the latest attempt's id; None when the application has no attempt ids
    completed: bool
    start_ms: int | None    # when the latest attempt started (epoch ms), if the server says


def server_url(text: str):
    """``(base URL, application id or None, attempt id or None)`` of an http(s) URL, or ``None`` for anything else.

    The base is what comes before ``/history/<app-id>`` (the web UI's page of an
    application) or ``/api/v1/applications/<app-id>`` (the REST API's), so that a
    server behind a path prefix works too; another URL is taken as the base itself.
    """
    parts = urllib.parse.urlsplit(str(text))
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    root = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    match = _APP_PATH.match(path)
    if not match:
        return root + path.removesuffix("/api/v1/applications").removesuffix("/api/v1"), None, None
    attempt = (match.group("rest") or "").split("/")[0]
    return root + match.group("base"), urllib.parse.unquote(match.group("app")), (
        attempt if _ATTEMPT.match(attempt) else None)


def parse_date(text: str, what: str) -> datetime.datetime:
    """The moment ``text`` names (``YYYY-MM-DD`` or an ISO time; UTC unless it says), as an aware datetime.

    >>> parse_date("2024-03-01T12:30:00+01:00", "--until").isoformat()
    '2024-03-01T11:30:00+00:00'
    """
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise LogFormatError(f"{what} {text!r}: expected a date YYYY-MM-DD or a time YYYY-MM-DDTHH:MM[:SS]",
                             option=what.lstrip("-").replace("-", "_")) from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc)


def _server_date(moment: datetime.datetime) -> str:
    """A moment as the server's ``minDate``/``maxDate`` take it.

    >>> _server_date(parse_date("2024-03-01", "--since"))
    '2024-03-01T00:00:00.000GMT'
    """
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}GMT"


def list_applications(base: str, *, status: str | None = None, since: datetime.datetime | None = None,
                      until: datetime.datetime | None = None, limit: int | None = None,
                      timeout: float = DEFAULT_TIMEOUT) -> list[Application]:
    """The applications the server at ``base`` lists, newest first, filtered there by the given values.

    ``since``/``until`` bound an attempt's start (aware datetimes, :func:`parse_date`),
    ``status`` is ``"completed"`` or ``"running"``, ``limit`` the most returned.
    """
    dates = [(key, _server_date(moment)) for key, moment in (("minDate", since), ("maxDate", until)) if moment]
    query = dict([(key, value) for key, value in (("status", status), ("limit", limit)) if value is not None]
                 + dates)
    url = f"{base}/api/v1/applications" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    listing = _get_json(url, timeout)
    if not isinstance(listing, list):
        raise LogFormatError(f"{url}: the answer is JSON but not a list of applications: not a Spark History "
                             "Server's REST API")
    return [_application(entry, url) for entry in listing]


def application(base: str, app_id: str, *, timeout: float = DEFAULT_TIMEOUT) -> Application:
    """The application ``app_id`` at the server ``base``; an unknown id is a ``LogFormatError``."""
    url = f"{base}/api/v1/applications/{urllib.parse.quote(app_id, safe='')}"
    return _application(_get_json(url, timeout, missing=f"no application {app_id!r} at {base}"), url)


def download_log(base: str, app: Application, directory, *, timeout: float = DEFAULT_TIMEOUT) -> list[Path]:
    """Fetch the event log of ``app`` into the folder ``directory``: the log files and folders unpacked there.

    The archive is streamed to ``directory`` and removed once unpacked; an
    archive holding no event log is a ``LogFormatError``.
    """
    directory = Path(directory)
    attempt = f"/{urllib.parse.quote(app.attempt, safe='')}" if app.attempt else ""
    url = f"{base}/api/v1/applications/{urllib.parse.quote(app.id, safe='')}{attempt}/logs"
    archive = directory / "eventlogs.zip"
    with _open(url, timeout, missing=f"no event log of {app.id!r} at {base}") as response, \
            open(archive, "wb") as out:
        while True:
            chunk = _read(response, _CHUNK, url, timeout)
            if not chunk:
                break
            out.write(chunk)
    try:
        return _unpack(archive, directory, url)
    finally:
        archive.unlink(missing_ok=True)


def _unpack(archive: Path, directory: Path, url: str) -> list[Path]:
    """The logs of a History Server's archive, unpacked into ``directory`` (one entry at a time)."""
    if not zipfile.is_zipfile(archive):
        raise LogFormatError(f"{url}: the answer is not a zip archive of event logs: not a Spark History Server")
    tops = []
    try:
        with zipfile.ZipFile(archive) as packed:
            for member in packed.infolist():
                name = PurePosixPath(member.filename)
                if name.is_absolute() or ".." in name.parts or len(name.parts) > 2 or member.is_dir():
                    continue    # the server writes files and eventlog_v2_* folders only: nothing to follow out
                if len(name.parts) == 2 and not name.parts[0].startswith("eventlog_v2_"):
                    continue
                target = directory.joinpath(*name.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with packed.open(member) as source, open(target, "wb") as out:
                    shutil.copyfileobj(source, out, _CHUNK)
                if name.parts[0] not in tops:
                    tops.append(name.parts[0])
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as error:
        raise LogFormatError(f"{url}: cannot unpack the event log archive ({error})") from None
    logs = [directory / top for top in tops
            if (directory / top).is_file() or any((directory / top).glob("events_*"))]
    logs = [log for log in logs if not log.name.startswith(("appstatus_", "."))]
    if not logs:
        raise LogFormatError(f"{url}: the archive holds no event log")
    return logs


def _application(entry, url: str) -> Application:
    """An entry of the listing, checked: an id, a name and at least one attempt."""
    if (not isinstance(entry, dict) or not isinstance(entry.get("id"), str)
            or not isinstance(entry.get("attempts"), list) or not entry["attempts"]
            or not all(isinstance(attempt, dict) for attempt in entry["attempts"])):
        raise LogFormatError(f"{url}: an application without an id or attempts ({str(entry)[:80]}): not a Spark "
                             "History Server's REST API")
    latest = entry["attempts"][0]      # the server lists attempts newest first
    attempt = latest.get("attemptId")
    start = latest.get("startTimeEpoch")
    return Application(id=entry["id"], name=str(entry.get("name", "")),
                       attempt=None if attempt is None else str(attempt), completed=bool(latest.get("completed")),
                       start_ms=start if isinstance(start, int) else None)


def _get_json(url: str, timeout: float, *, missing: str | None = None):
    """The JSON value at ``url``, read whole (at most :data:`MAX_LISTING_BYTES`) within ``timeout`` in all."""
    deadline = time.monotonic() + timeout
    body = bytearray()
    with _open(url, timeout, missing=missing) as response:
        while True:
            chunk = _read(response, 1 << 16, url, timeout)
            if not chunk:
                break
            body += chunk
            if len(body) > MAX_LISTING_BYTES:
                raise LogFormatError(f"{url}: more than {MAX_LISTING_BYTES >> 20} MiB of listing: narrow it "
                                     "(--app-id, --since, --until, --limit)")
            if time.monotonic() > deadline:
                raise LogFormatError(f"{url}: the server took more than {timeout:g} s to answer",
                                     option="timeout")
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        what = "an HTML page" if body.lstrip()[:1] == b"<" else "something"
        raise LogFormatError(f"{url}: the server answered with {what} that is not JSON: not a Spark History "
                             "Server's REST API") from None


def _open(url: str, timeout: float, *, missing: str | None = None):
    """The response to ``GET url``; an error (down, silent, HTTP 4xx/5xx) is a ``LogFormatError`` saying which."""
    request = urllib.request.Request(url, headers={"Accept": "application/json, application/octet-stream"})
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        detail = _first_line(error)
        error.close()
        if error.code == 404 and missing:
            raise LogFormatError(f"{url}: {missing} (HTTP 404{detail})") from None
        raise LogFormatError(f"{url}: HTTP {error.code} {error.reason}{detail}") from None
    except urllib.error.URLError as error:
        raise _connection_error(url, error.reason, timeout) from None
    except (TimeoutError, socket.timeout, OSError) as error:
        raise _connection_error(url, error, timeout) from None


def _read(response, size: int, url: str, timeout: float) -> bytes:
    try:
        return response.read(size)
    except (TimeoutError, socket.timeout):
        raise LogFormatError(f"{url}: the server sent nothing for {timeout:g} s", option="timeout") from None
    except OSError as error:
        raise LogFormatError(f"{url}: the connection broke while reading ({error})") from None


def _connection_error(url: str, reason, timeout: float) -> LogFormatError:
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return LogFormatError(f"{url}: no answer within {timeout:g} s", option="timeout")
    if isinstance(reason, ConnectionRefusedError):
        return LogFormatError(f"{url}: connection refused: is a Spark History Server running there?")
    return LogFormatError(f"{url}: cannot connect ({getattr(reason, 'strerror', None) or reason})")


def _first_line(error: urllib.error.HTTPError) -> str:
    """``: <the first line of the error page>`` when it is short text, else nothing."""
    try:
        text = error.read(512).decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return f": {text[0][:120]}" if text and not text[0].startswith("<") else ""
