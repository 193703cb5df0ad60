"""Logs from a Spark History Server: ``spn fit http://host:port --app-name ...`` and its refusals.

A fake server (``http.server`` in a thread, :class:`FakeServer`) answers as the REST
API v1 does, from a folder of the real Apache logs (``../shared/data/spark-events``,
``SPN_DATA`` overrides): its listing and archives are built here with plain
``json`` and ``zipfile``, never with the code under test. Through it, a model
fitted from the server equals the model fitted from the same file on disk, the
filters reach the server, temporary downloads are removed, and every way a
server can fail (down, silent, HTML, JSON that is not a listing, HTTP 404 and
500, an archive that is not a zip or holds no log) ends in one line naming the
URL, exit status 2, within the timeout.

A real History Server (pyspark's jars, Java 17; ``tests/spark_logs.py``) over the
Apache logs and the logs real Spark wrote in every codec answers the same
commands (marked ``slow``: starting the JVMs takes tens of seconds).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from spn.cli import main
from spn.logs import history_server
from spn.logs.inputs import resolve_inputs
from spark_logs import APP_NAME, history_server as real_history_server, serve_folder
from spark_logs import missing as spark_missing

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
EVENTS = DATA / "spark-events"
needs_data = pytest.mark.skipif(not EVENTS.is_dir(), reason=f"the Apache Spark logs are absent ({EVENTS})")
LARGE_BLOCKS = "application_1553914137147_0018"


# --------------------------------------------------------------------------
# A fake History Server, built from the logs with plain json and zipfile
# --------------------------------------------------------------------------


def _application_start(path: Path) -> dict:
    files = sorted(path.glob("events_*")) if path.is_dir() else [path]
    for line in files[0].read_text().splitlines():
        if '"SparkListenerApplicationStart"' in line:
            return json.loads(line)
    raise AssertionError(f"{path}: no ApplicationStart")


def _gmt(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}GMT"


def _archive(path: Path) -> bytes:
    """The zip a History Server sends: one file as the server names it, or a rolling folder's entries."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as packed:
        if path.is_dir():
            for file in sorted(path.iterdir()):
                packed.write(file, f"{path.name}/{file.name}")
        else:
            packed.write(path, path.name.removesuffix(".json"))
    return out.getvalue()


class FakeServer:
    """The REST API v1 over ``logs`` (paths), newest first; ``mode`` makes it misbehave (see ``_answer``)."""

    def __init__(self, logs, mode: str = "ok", delay: float = 0.0, attempt: str | None = None):
        self.mode, self.delay, self.attempt, self.queries = mode, delay, attempt, []
        self.apps = {}
        for path in logs:
            start = _application_start(path)
            self.apps[start["App ID"]] = (path, {
                "id": start["App ID"], "name": start["App Name"],
                "attempts": [{"startTime": _gmt(start["Timestamp"]), "startTimeEpoch": start["Timestamp"],
                              "completed": True, "sparkUser": "test"}
                             | ({"attemptId": attempt} if attempt else {})]})
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.queries.append(self.path)
                fake._answer(self)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None    # a client that gave up is no news
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def _answer(self, request) -> None:
        path = request.path.split("?")[0].rstrip("/")
        if self.mode == "slow":
            time.sleep(self.delay)
        if self.mode == "500":
            return self._send(request, 500, b"java.lang.NullPointerException\n\tat org.apache...", "text/plain")
        if self.mode == "html":
            return self._send(request, 200, b"<!DOCTYPE html><html><body>Sign in</body></html>", "text/html")
        if self.mode == "object":
            return self._send(request, 200, b'{"applications": []}', "application/json")
        parts = path.split("/")[4:]          # after /api/v1/applications
        if not path.startswith("/api/v1/applications"):
            return self._send(request, 404, b"not found", "text/plain")
        newest = sorted(self.apps.values(), key=lambda app: -app[1]["attempts"][0]["startTimeEpoch"])
        if not parts:
            return self._send(request, 200, json.dumps([entry for _, entry in newest]).encode(), "application/json")
        if parts[0] not in self.apps:
            return self._send(request, 404, f"unknown app: {parts[0]}".encode(), "text/plain")
        log, entry = self.apps[parts[0]]
        if len(parts) == 1:
            return self._send(request, 200, json.dumps(entry).encode(), "application/json")
        if parts[1:] != ([self.attempt, "logs"] if self.attempt else ["logs"]):
            return self._send(request, 404, b"no such attempt", "text/plain")
        if self.mode == "notzip":
            return self._send(request, 200, b"this is not an archive", "application/octet-stream")
        if self.mode == "emptyzip":
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w") as packed:
                packed.writestr("eventlog_v2_x/appstatus_x", b"")
            return self._send(request, 200, out.getvalue(), "application/octet-stream")
        body = _archive(log)
        if self.mode == "stall":     # headers and half the archive, then silence
            request.send_response(200)
            request.send_header("Content-Length", str(len(body)))
            request.end_headers()
            request.wfile.write(body[: len(body) // 2])
            request.wfile.flush()
            time.sleep(self.delay)
            return None
        return self._send(request, 200, body, "application/octet-stream")

    @staticmethod
    def _send(request, status: int, body: bytes, kind: str) -> None:
        request.send_response(status)
        request.send_header("Content-Type", kind)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert "Traceback" not in err
    errors = [line for line in lines if line.startswith("spn: error:")]
    assert len(errors) == 1, lines
    return errors[0]


def model(path: Path) -> dict:
    """A fitted description, each log it names cut to its application id: a model fitted from a server names
    the application's URL there, one fitted from files the file (``local-1.zstd``, ``eventlog_v2_local-1``)."""

    def names(value):
        if isinstance(value, dict):
            return {key: names(item) for key, item in value.items()}
        if isinstance(value, list):
            return [names(item) for item in value]
        if isinstance(value, str) and "/" in value:
            return Path(value).name.removeprefix("eventlog_v2_").split(".")[0]
        return value

    return names(yaml.safe_load(path.read_text()))


# --------------------------------------------------------------------------
# Through the fake server
# --------------------------------------------------------------------------


@needs_data
def test_fit_from_a_server_is_the_fit_of_the_same_file(tmp_path, capsys, monkeypatch):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))     # where the download goes, this test's own
    with FakeServer([EVENTS / f"{LARGE_BLOCKS}.json", EVENTS / "local-1430917381534.json"]) as server:
        code, out, err = run(capsys, "fit", server.url, "--app-name", "LargeBlocks", "-o", tmp_path / "server.yaml")
        assert code == 0, err
        assert f"/api/v1/applications/{LARGE_BLOCKS}/logs" in server.queries
    assert list(temporary.iterdir()) == []          # the download is gone
    assert f"fetched 1 application log(s): {LARGE_BLOCKS} (LargeBlocks)" in err
    # the provenance names the application at the server, not the download's temporary path
    text = (tmp_path / "server.yaml").read_text()
    assert f"# Fitted by `spn fit` from {server.url.rstrip('/')}/api/v1/applications/{LARGE_BLOCKS}\n" in text
    assert "spn-logs-" not in text and str(temporary) not in text
    assert run(capsys, "fit", EVENTS / f"{LARGE_BLOCKS}.json", "-o", tmp_path / "file.yaml")[0] == 0
    assert model(tmp_path / "server.yaml") == model(tmp_path / "file.yaml")


@needs_data
@pytest.mark.parametrize("how", ["--app-id", "history page", "api url"])
def test_one_application_by_id_or_by_its_url(tmp_path, capsys, how):
    with FakeServer([EVENTS / f"{LARGE_BLOCKS}.json", EVENTS / "local-1430917381534.json"]) as server:
        given = {"--app-id": [server.url, "--app-id", LARGE_BLOCKS],
                 "history page": [f"{server.url}/history/{LARGE_BLOCKS}/jobs/"],
                 "api url": [f"{server.url}/api/v1/applications/{LARGE_BLOCKS}"]}[how]
        code, out, err = run(capsys, "fit", *given, "-o", tmp_path / "m.yaml")
        assert code == 0, err
        assert f"/api/v1/applications/{LARGE_BLOCKS}/logs" in server.queries
        assert not any(query.startswith("/api/v1/applications?") for query in server.queries)   # no listing
    assert model(tmp_path / "m.yaml")["name"] == LARGE_BLOCKS


@needs_data
def test_the_log_of_an_attempt_is_fetched_by_its_id(tmp_path, capsys):
    """A YARN application in cluster mode has attempt ids: its log is at .../<app-id>/<attempt-id>/logs."""
    with FakeServer([EVENTS / f"{LARGE_BLOCKS}.json"], attempt="2") as server:
        code, out, err = run(capsys, "fit", server.url, "-o", tmp_path / "m.yaml")
        assert code == 0, err
        assert f"/api/v1/applications/{LARGE_BLOCKS}/2/logs" in server.queries


@needs_data
def test_filters_reach_the_server_and_the_limit_counts_after_the_name(tmp_path):
    logs = [EVENTS / name for name in ("local-1422981780767.json", "local-1430917381534.json",
                                       "application_1516285256255_0012.json", f"{LARGE_BLOCKS}.json")]
    with FakeServer(logs) as server:
        with resolve_inputs([server.url], app_name="Spark*", limit=2, since="2015-01-01",
                            until="2030-01-01T00:00+01:00") as inputs:
            ids = [log.app_id for log in inputs.logs]
    listing = [query for query in server.queries if "?" in query][0]
    assert "status=completed" in listing and "minDate=2015-01-01T00%3A00%3A00.000GMT" in listing
    assert "maxDate=2029-12-31T23%3A00%3A00.000GMT" in listing
    assert "limit" not in listing          # the name is filtered here, so the limit is applied here
    # the two newest of the three "Spark shell" runs, oldest first
    assert ids == ["local-1430917381534", "application_1516285256255_0012"]


@needs_data
def test_a_name_that_matches_nothing_lists_what_the_server_has(capsys):
    with FakeServer([EVENTS / f"{LARGE_BLOCKS}.json"]) as server:
        line = one_error(*run(capsys, "fit", server.url, "--app-name", "q26*")[::2])
    assert server.url in line and "no application matches" in line and "'LargeBlocks'" in line
    assert line.endswith("(--app-name)")


@needs_data
def test_several_applications_are_refused_before_any_download(capsys):
    with FakeServer([EVENTS / f"{LARGE_BLOCKS}.json", EVENTS / "local-1430917381534.json"]) as server:
        line = one_error(*run(capsys, "fit", server.url)[::2])
        assert not any(query.endswith("/logs") for query in server.queries)
    assert "logs of 2 applications" in line and "'LargeBlocks': 1 run(s)" in line and "(--app-name)" in line


@needs_data
def test_the_other_commands_take_a_server_too(capsys):
    """``spn baseline`` (here without the SAN column, which takes long) reads what ``spn fit`` reads."""
    with FakeServer([EVENTS / "local-1430917381534.json"]) as server:
        code, out, err = run(capsys, "baseline", server.url, "--no-san", "--json")
    assert code == 0, err
    file_code, file_out, _ = run(capsys, "baseline", EVENTS / "local-1430917381534.json", "--no-san", "--json")
    assert file_code == 0
    assert json.loads(out)["predictions"] == json.loads(file_out)["predictions"]


# --------------------------------------------------------------------------
# Refusals: one line naming the URL, exit 2, within the timeout
# --------------------------------------------------------------------------


def test_a_server_that_is_down(capsys):
    with FakeServer([]) as server:
        url = server.url
    line = one_error(*run(capsys, "fit", url, "--timeout", "2")[::2])
    assert url in line and "connection refused" in line


@needs_data
@pytest.mark.parametrize("mode, words", [
    ("slow", ["no answer within 1 s", "(--timeout)"]),
    ("html", ["an HTML page that is not JSON", "not a Spark History Server"]),
    ("object", ["not a list of applications"]),
    ("500", ["HTTP 500", "NullPointerException"]),
    ("notzip", ["not a zip archive"]),
    ("emptyzip", ["holds no event log"]),
    ("stall", ["sent nothing for 1 s", "(--timeout)"]),
])
def test_a_server_that_misbehaves(capsys, mode, words):
    with FakeServer([EVENTS / f"{LARGE_BLOCKS}.json"], mode=mode, delay=4) as server:
        started = time.monotonic()
        line = one_error(*run(capsys, "fit", server.url, "--timeout", "1")[::2])
        took = time.monotonic() - started
    assert server.url in line, line
    for word in words:
        assert word in line, line
    assert took < 4, f"{took:.1f} s: the timeout was not kept"      # the server would have answered at 4 s


@needs_data
def test_an_unknown_application_is_named(capsys):
    with FakeServer([EVENTS / f"{LARGE_BLOCKS}.json"]) as server:
        line = one_error(*run(capsys, "fit", server.url, "--app-id", "application_0_0")[::2])
    assert "no application 'application_0_0'" in line and "HTTP 404" in line and server.url in line


def test_bad_dates_are_refused_naming_the_option(capsys):
    line = one_error(*run(capsys, "fit", "http://127.0.0.1:9", "--since", "last tuesday")[::2])
    assert "--since 'last tuesday'" in line and line.endswith("(--since)")


def test_urls_name_the_server_and_the_application():
    assert history_server.server_url("http://h:18080") == ("http://h:18080", None, None)
    assert history_server.server_url("http://h:18080/api/v1/applications/") == ("http://h:18080", None, None)
    assert history_server.server_url("http://h:18080/history/app-1/2/jobs/") == ("http://h:18080", "app-1", "2")
    assert history_server.server_url("/data/http:/x") is None


# --------------------------------------------------------------------------
# A real History Server (slow: it and the Spark runs that write the codec logs start JVMs)
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def apache_server(tmp_path_factory):
    """A real History Server over the Apache logs alone (no Spark run needed: this one starts one JVM)."""
    why = spark_missing()
    if why:
        pytest.skip(why)
    served = tmp_path_factory.mktemp("apache-history")
    count = serve_folder(EVENTS, None, served / "logs")
    with real_history_server(served / "logs", count, log=served / "server.log") as url:
        yield url


@needs_data
def test_a_real_server_gives_the_model_of_its_file(apache_server, tmp_path, capsys):
    """The one real-server test of the default run (the JVM starts in some 20 s on a loaded machine)."""
    code, out, err = run(capsys, "fit", apache_server, "--app-name", "LargeBlocks", "-o", tmp_path / "server.yaml")
    assert code == 0, err
    assert run(capsys, "fit", EVENTS / f"{LARGE_BLOCKS}.json", "-o", tmp_path / "file.yaml")[0] == 0
    assert model(tmp_path / "server.yaml") == model(tmp_path / "file.yaml")


@pytest.fixture(scope="module")
def real_server(spark_logs, tmp_path_factory):
    folder, manifest = spark_logs
    served = tmp_path_factory.mktemp("history")
    count = serve_folder(EVENTS, folder, served / "logs")
    with real_history_server(served / "logs", count, log=served / "server.log") as url:
        yield url, served / "logs", manifest


@needs_data
@pytest.mark.slow
def test_a_real_server_gives_the_model_of_its_files(real_server, tmp_path, capsys):
    url, served, manifest = real_server
    code, out, err = run(capsys, "fit", url, "--app-name", APP_NAME, "-o", tmp_path / "server.yaml")
    assert code == 0, err
    assert f"fetched {len(manifest)} application log(s)" in err
    local = sorted(manifest, key=lambda entry: entry["app_id"])    # ids grow with the start time
    assert run(capsys, "fit", *[served / entry["path"] for entry in local], "-o", tmp_path / "file.yaml")[0] == 0
    assert model(tmp_path / "server.yaml") == model(tmp_path / "file.yaml")


@needs_data
@pytest.mark.slow
def test_a_real_server_predicts_one_application_by_id(real_server, capsys):
    url, served, manifest = real_server
    entry = next(e for e in manifest if e["codec"] == "lz4" and not e["rolling"])
    # past 100 states a seeded simulation answers: the exact chain of this log takes minutes
    asked = ["--vary", "spark.executor.instances=1,2", "--max-states", "100", "--json"]
    code, out, err = run(capsys, "predict", url, "--app-id", entry["app_id"], *asked)
    assert code == 0, err
    file_out = run(capsys, "predict", served / entry["path"], *asked)[1]
    assert json.loads(out)["rows"] == json.loads(file_out)["rows"]


@needs_data
@pytest.mark.slow
def test_a_real_server_filters_by_date_and_limit(real_server):
    url, served, manifest = real_server
    with resolve_inputs([url], until="2019-12-31", status="completed") as inputs:
        assert {log.app_name for log in inputs.logs} == {"Spark shell", "LargeBlocks"}   # 2015-2019 fixtures
    with resolve_inputs([url], app_name="Spark shell", since="2017-01-01", limit=1) as inputs:
        assert [log.app_id for log in inputs.logs] == ["application_1628109047826_1317105"]   # the 2021 one
