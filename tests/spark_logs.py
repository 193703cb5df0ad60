"""Real Spark, for the tests: event logs written in every codec, and a History Server serving a folder.

- ``python tests/spark_logs.py ROOT`` runs one tiny application (4 map tasks, a
  shuffle, 4 reduce tasks; named :data:`APP_NAME`) in local mode once per way Spark
  can write its event log: one file plain and in each codec (zstd, lz4, lzf,
  snappy), and rolling ``eventlog_v2_*`` folders (zstd, lz4). It then reads every
  events file back through Spark's own ``CompressionCodec`` classes in the same
  JVM. The logs go to ``ROOT/logs``; ``ROOT/manifest.json`` says per log its
  codec, whether rolling, its application id and the SHA-256 of each file's bytes
  as Spark decompresses them, the reference spn's reader is held to.
- :func:`spark_logs` (a session fixture, registered in ``conftest.py``) runs that
  script once for all pytest workers (a file lock under the session's base
  temporary folder) and gives the manifest; it skips, saying why, where Java or
  pyspark is absent.
- :func:`history_server` starts ``org.apache.spark.deploy.history.HistoryServer``
  from pyspark's jars over a folder, waits until ``/api/v1/applications`` lists
  the expected applications, and stops it when the block ends.

On a loaded two-core machine the script takes 1-2 minutes and a History Server
15-25 s to list its applications: the tests that need the script are marked
``slow``; one real-server test over the Apache logs alone stays in the default run.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

#: the name every run of the test application is given (so a History Server groups them)
APP_NAME = "spn-codecs"
#: (codec or None, rolling) of every log the script writes
LOGS = ((None, False), ("zstd", False), ("lz4", False), ("lzf", False), ("snappy", False),
        ("zstd", True), ("lz4", True))
#: seconds the script may take (a JVM and seven applications on a loaded machine)
WRITE_TIMEOUT = 900
#: seconds a History Server may take to list its applications
SERVER_TIMEOUT = 240


def missing() -> str | None:
    """Why real Spark cannot run here, or ``None``."""
    if shutil.which("java") is None:
        return "Java is not installed (real Spark needs Java 17)"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install -e '.[test]')"
    return None


def jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


# --------------------------------------------------------------------------
# Writing the logs (run as a script, in its own process: the JVM stays there)
# --------------------------------------------------------------------------


def write_logs(root: Path) -> None:
    """Run the application once per entry of :data:`LOGS` into ``root/logs``; then write ``root/manifest.json``."""
    from pyspark import SparkConf, SparkContext

    folder = root / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for codec, rolling in LOGS:
        conf = (SparkConf().setMaster("local[2]").setAppName(APP_NAME)
                .set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false")
                .set("spark.eventLog.enabled", "true").set("spark.eventLog.dir", f"file:{folder}")
                .set("spark.eventLog.rolling.enabled", str(rolling).lower())
                .set("spark.eventLog.compress", str(codec is not None).lower()))
        if codec:
            conf.set("spark.eventLog.compression.codec", codec)
        before = set(folder.iterdir())
        sc = SparkContext(conf=conf)
        sc.setLogLevel("ERROR")
        sc.parallelize(range(2000), 4).map(lambda x: (x % 7, x)).reduceByKey(lambda a, b: a + b, 4).collect()
        app_id = sc.applicationId
        sc.stop()
        (log,) = set(folder.iterdir()) - before
        written.append({"path": log.name, "codec": codec, "rolling": rolling, "app_id": app_id})
    # read back through Spark's own codecs, in a fresh context (the JVM is still up)
    sc = SparkContext(conf=SparkConf().setMaster("local[1]").setAppName("spn-read-back")
                      .set("spark.ui.enabled", "false").set("spark.eventLog.enabled", "false"))
    codecs = getattr(sc._jvm.org.apache.spark.io, "CompressionCodec$").__getattr__("MODULE$")
    for entry in written:
        log = folder / entry["path"]
        files = sorted(log.glob("events_*")) if log.is_dir() else [log]
        entry["sha256"] = {}
        for file in files:
            stream = sc._jvm.java.io.FileInputStream(str(file))
            if entry["codec"]:
                stream = codecs.createCodec(sc._conf._jconf, entry["codec"]).compressedInputStream(stream)
            data = bytes(sc._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
            stream.close()
            entry["sha256"][str(file.relative_to(folder))] = hashlib.sha256(data).hexdigest()
    sc.stop()
    (root / "manifest.json").write_text(json.dumps(written, indent=1))


# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark_logs(tmp_path_factory, worker_id):
    """``(folder of logs, manifest)``: the logs of :func:`write_logs`, written once for every pytest worker."""
    why = missing()
    if why:
        pytest.skip(why)
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent     # the base folder all xdist workers of this session share
    root = shared / "spark-codec-logs"
    with open(shared / "spark-codec-logs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "manifest.json").exists():
            shutil.rmtree(root, ignore_errors=True)
            script = subprocess.run([sys.executable, __file__, str(root)], capture_output=True, text=True,
                                    timeout=WRITE_TIMEOUT)
            if script.returncode != 0:
                pytest.fail(f"real Spark failed to write the logs:\n{script.stderr[-3000:]}")
    return root / "logs", json.loads((root / "manifest.json").read_text())


@contextlib.contextmanager
def history_server(folder: Path, expected: int, *, log: Path):
    """A real History Server over ``folder`` on a free port of 127.0.0.1; yields its URL once it lists
    ``expected`` applications. Its output goes to ``log``; it is stopped when the block ends."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # a short-lived server: the quick (C1) compiler alone and the serial collector start it some 30 % sooner
    command = ["java", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", f"{jars()}/*",
               f"-Dspark.history.fs.logDirectory=file:{folder}",
               f"-Dspark.history.ui.port={port}", "-Dspark.history.fs.update.interval=1s",
               "org.apache.spark.deploy.history.HistoryServer"]
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    try:
        deadline = time.monotonic() + SERVER_TIMEOUT
        listed = []
        while len(listed) < expected:
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the History Server did not list {expected} applications (it listed {len(listed)}):\n"
                            + log.read_text(errors="replace")[-3000:])
            time.sleep(1)
            try:
                with urllib.request.urlopen(f"{url}/api/v1/applications", timeout=5) as answer:
                    listed = json.load(answer)
            except OSError:
                listed = []
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _die_with_parent() -> None:
    """In the server's process before Java starts: be stopped (SIGTERM) when the test process ends, even
    killed, so that no server outlives the tests (Linux's PR_SET_PDEATHSIG; elsewhere nothing)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)     # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def serve_folder(fixtures: Path, codec_logs: Path | None, folder: Path) -> int:
    """Fill ``folder`` as a ``spark.eventLog.dir`` a History Server reads; return how many applications it holds.

    The Apache fixtures (stored with a ``.json`` suffix the server would take for a
    codec) get their upstream names back, and their rolling log the ``appstatus``
    marker Spark writes beside the events; the codec logs are copied as written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    rolling = []
    for source in sorted(fixtures.iterdir()):
        if source.is_dir():
            shutil.copytree(source, folder / source.name)
            rolling.append(folder / source.name)
        else:
            shutil.copyfile(source, folder / source.name.removesuffix(".json"))
    if codec_logs is not None:
        for source in sorted(codec_logs.iterdir()):
            if not source.name.startswith("."):
                (shutil.copytree if source.is_dir() else shutil.copyfile)(source, folder / source.name)
    for path in folder.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)    # the shared data is read-only
    for log in rolling:
        (log / f"appstatus_{log.name.removeprefix('eventlog_v2_')}").touch()
    return sum(1 for entry in folder.iterdir() if not entry.name.startswith("."))


if __name__ == "__main__":
    write_logs(Path(sys.argv[1]))
