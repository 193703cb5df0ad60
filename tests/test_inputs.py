"""What a command may take as its logs: files as given, and a folder of logs (``spark.eventLog.dir``).

On a copy of the real Apache logs (``../shared/data/spark-events``, ``SPN_DATA``
overrides) with what a live ``spark.eventLog.dir`` also holds: a gzip-compressed
log, logs still being written (``.inprogress``, a rolling folder whose marker says
so), Hadoop's hidden ``.crc`` files, a README and a stray folder. The names and
start times expected are read here with plain ``json`` from the logs themselves.
A History Server as input is tested in tests/test_history_server.py, the codecs in
tests/test_codecs.py.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from spn.cli import main
from spn.exceptions import LogFormatError
from spn.logs.inputs import resolve_inputs

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
EVENTS = DATA / "spark-events"
pytestmark = pytest.mark.skipif(not EVENTS.is_dir(), reason=f"the Apache Spark logs are absent ({EVENTS})")
ROOT = Path(__file__).resolve().parents[1]


def application_start(path: Path) -> dict:
    files = sorted(path.glob("events_*")) if path.is_dir() else [path]
    opener = gzip.open if files[0].suffix == ".gz" else open
    with opener(files[0], "rt") as log:
        for line in log:
            if '"SparkListenerApplicationStart"' in line:
                return json.loads(line)
    raise AssertionError(path)


@pytest.fixture
def event_dir(tmp_path):
    """A spark.eventLog.dir: the Apache logs (one gzipped), two in progress, and what else lives there."""
    folder = tmp_path / "spark-events"
    folder.mkdir()
    for source in EVENTS.iterdir():
        if source.is_dir():
            shutil.copytree(source, folder / source.name)
        elif source.name == "application_1516285256255_0012.json":
            (folder / (source.name + ".gz")).write_bytes(gzip.compress(source.read_bytes()))
        else:
            shutil.copyfile(source, folder / source.name)
    for path in folder.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    shutil.copyfile(EVENTS / "local-1430917381534.json", folder / "app-running.inprogress")
    rolling = folder / "eventlog_v2_app-running"
    shutil.copytree(EVENTS / "eventlog_v2_local-1766844910796", rolling)
    os.chmod(rolling, 0o755)
    (rolling / "appstatus_app-running.inprogress").touch()
    (folder / ".local-1430917381534.json.crc").write_bytes(b"crc\x00")
    (folder / "README.md").write_text("# our event logs\n")
    (folder / "old").mkdir()
    return folder


def expected_logs():
    """``(file name, app id, name, start)`` of every finished Apache log, oldest first."""
    found = []
    for source in EVENTS.iterdir():
        start = application_start(source)
        name = source.name + (".gz" if source.name == "application_1516285256255_0012.json" else "")
        found.append((start["Timestamp"], name, start["App ID"], start["App Name"]))
    return [(name, app_id, app_name, start) for start, name, app_id, app_name in sorted(found)]


def test_a_folder_is_every_finished_log_in_it_oldest_first(event_dir):
    with resolve_inputs([event_dir]) as inputs:
        got = [(log.path.name, log.app_id, log.app_name, log.start_ms) for log in inputs.logs]
        notes = inputs.notes
    assert got == expected_logs()
    assert len(got) == 8
    assert len(notes) == 1
    for left_out in ("app-running.inprogress (still being written", "eventlog_v2_app-running (still being",
                     "README.md (not an event log)", "old (a folder, not a rolling event log)"):
        assert left_out in notes[0]
    assert ".crc" not in notes[0]


def test_running_applications_are_chosen_by_status(event_dir):
    with resolve_inputs([event_dir], status="running") as inputs:
        assert sorted(log.path.name for log in inputs.logs) == ["app-running.inprogress", "eventlog_v2_app-running"]
    with resolve_inputs([event_dir], status="any") as inputs:
        assert len(inputs.logs) == 10


@pytest.mark.parametrize("filters, ids", [
    ({"app_name": "LargeBlocks"}, ["application_1553914137147_0018"]),
    ({"app_name": "Large*"}, ["application_1553914137147_0018"]),
    ({"app_name": "Spark shell", "limit": 2},            # the newest two, oldest first
     ["application_1506645932520_24630151", "application_1628109047826_1317105"]),
    ({"app_id": ["local-1430917381534", "app-20161116163331-0000"]}, ["local-1430917381534",
                                                                      "app-20161116163331-0000"]),
    ({"since": "2018-01-01", "until": "2019-12-31T23:59"},
     ["application_1516285256255_0012", "application_1506645932520_24630151", "application_1553914137147_0018"]),
    ({"since": "2018-04-19T23:54:42.734+00:00", "until": "2018-04-20T01:54:42.734+02:00"},
     ["application_1506645932520_24630151"]),      # both bounds hold the start to the millisecond
])
def test_a_folder_is_filtered(event_dir, filters, ids):
    with resolve_inputs([event_dir], **filters) as inputs:
        assert [log.app_id for log in inputs.logs] == ids


def test_logs_are_grouped_by_application_name(event_dir):
    with resolve_inputs([event_dir]) as inputs:
        groups = inputs.groups()
    assert {name: len(logs) for name, logs in groups.items()} == {
        "Spark shell": 6, "LargeBlocks": 1, "<script>alert('XSS')</script>": 1}


def test_one_application_is_asked_for_by_name(event_dir):
    with pytest.raises(LogFormatError, match=r"logs of 3 applications \('Spark shell': 6 run\(s\); .*'LargeBlocks'"):
        with resolve_inputs([event_dir], single=True):
            pass
    with resolve_inputs([event_dir], single=True, app_name="Spark shell") as inputs:
        assert len(inputs.logs) == 6


def test_a_folder_with_no_match_says_what_was_asked(event_dir):
    with pytest.raises(LogFormatError, match=r"spark-events: no event log in this folder matches "
                                             r"\(--app-name 'q26\*', --status completed\)"):
        with resolve_inputs([event_dir], app_name="q26*"):
            pass


def test_files_and_rolling_logs_pass_as_given(tmp_path):
    given = [ROOT / "models" / "mapreduce.yaml", EVENTS / "eventlog_v2_local-1766844910796",
             tmp_path / "missing.json"]       # a missing file is named by the reader that opens it
    with resolve_inputs(given, app_name="ignored for files") as inputs:
        assert inputs.paths == [str(path) for path in given]
        assert inputs.groups() == {None: inputs.logs}


def test_bad_filters_are_refused():
    with pytest.raises(LogFormatError, match="status 'done'"):
        with resolve_inputs([EVENTS], status="done"):
            pass
    with pytest.raises(LogFormatError, match="--until 'tomorrow'") as refused:
        with resolve_inputs([EVENTS], until="tomorrow"):
            pass
    assert refused.value.option == "until"


# --------------------------------------------------------------------------
# Through the commands
# --------------------------------------------------------------------------


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_fit_of_a_folder_by_name_is_the_fit_of_the_file(event_dir, tmp_path, capsys):
    code, out, err = run(capsys, "fit", event_dir, "--app-name", "LargeBlocks", "-o", tmp_path / "folder.yaml")
    assert code == 0, err
    assert "spn: note: " in err and "README.md (not an event log)" in err
    assert run(capsys, "fit", EVENTS / "application_1553914137147_0018.json", "-o", tmp_path / "file.yaml")[0] == 0
    folder, file = (yaml.safe_load((tmp_path / name).read_text()) for name in ("folder.yaml", "file.yaml"))
    assert folder["reference"].pop("logs") == [str(event_dir / "application_1553914137147_0018.json")]
    file["reference"].pop("logs")
    assert folder == file


def test_a_folder_of_several_applications_is_one_line_naming_the_option(event_dir, capsys):
    code, out, err = run(capsys, "backtest", event_dir)
    lines = [line for line in err.splitlines() if line.startswith("spn: error:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err
    assert "logs of 3 applications" in lines[0] and lines[0].endswith("(--app-name)")


@pytest.mark.parametrize("command", ["fit", "baseline", "predict", "backtest", "plan"])
def test_every_command_that_reads_logs_takes_the_options(capsys, command):
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    for option in ("--app-name", "--app-id", "--status", "--since", "--until", "--limit", "--timeout"):
        assert option in text, (command, option)
