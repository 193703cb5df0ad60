"""The ``spn`` command: exit status 0 / 2 (bad input) / 1 (unexpected), one-line errors, no tracebacks.

Most tests call ``main([...])`` in-process; a few run ``python -m spn.cli`` for real.
The pipeline (``spn.analysis.solve``) is replaced by a fake where only the command's
plumbing is under test; the tests at the end use the real one.
"""

import json
import math
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from spn.cli import format_report, main
from spn.pipeline.summary import format_distribution
from spn.exceptions import StateSpaceLimitError
from spn.description import schema

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = str(REPO / "models" / "mapreduce.yaml")

#: what report.as_dict() returns (docs/design.md §5), with made-up numbers
REPORT = {
    "model": "mapreduce",
    "mean_execution_time": 13.336,
    "throughput": 0.12823,
    "utilization": 0.4317,
    "tangible_states": 1234,
    "transitions": 5678,
    "solver": {"method": "direct", "iterations": 1, "residual": 2.5e-16, "converged": True},
    "timings": {"explore_s": 0.0123, "solve_s": 0.0045, "total_s": 0.0201},
    "users": 3,
    "think_time": 10.0,
    "containers": 4,
}


def run(capsys, *args):
    """``spn ARGS`` in-process: (exit status, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def run_process(*args, env=None):
    """``python -m spn.cli ARGS`` in a fresh interpreter, from a directory that is not the repo."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), environment.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "spn.cli", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPO / "tests",
        timeout=120,
    )


def assert_one_line_error(err):
    assert err.startswith("spn: error: ")
    assert err.count("\n") == 1 and err.endswith("\n")
    assert "Traceback" not in err


@pytest.fixture
def fake_pipeline(monkeypatch):
    """Replace :func:`spn.pipeline.evaluate` by a fake that records its calls and returns REPORT."""
    import spn.pipeline

    fake = types.SimpleNamespace(fail=None, calls=[])

    def evaluate(source, settings=(), **options):
        fake.calls.append((source, list(settings), options))
        if fake.fail is not None:
            raise fake.fail
        return types.SimpleNamespace(as_dict=lambda: json.loads(json.dumps(REPORT)))

    monkeypatch.setattr(spn.pipeline, "evaluate", evaluate)
    return fake


# --------------------------------------------------------------------------
# Bad input: exit 2, one line on stderr
# --------------------------------------------------------------------------


@pytest.fixture
def malformed(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nphases: [\n")
    return str(path)


@pytest.mark.parametrize(
    "args, expected",
    [
        (["solve", "nosuch.yaml"], "nosuch.yaml: no such file"),
        (["solve", EXAMPLE, "--set", "phases.reduce.tasks=0"], "phases[1] (reduce).tasks: expected an integer >= 1, got 0"),
        (["solve", EXAMPLE, "--set", "workload.userz=5"], "unknown key 'userz' in workload"),
        (["solve", EXAMPLE, "--set", "phases.nosuch.tasks=3"], "unknown phase 'nosuch' (phases: map, reduce)"),
        (["solve", EXAMPLE, "--set", "workload.users"], "expected PATH=VALUE"),
        (["solve", EXAMPLE, "--tol", "-1"], "argument --tol: expected a number > 0, got '-1'"),
        (["solve", EXAMPLE, "--tol", "0"], "argument --tol: expected a number > 0"),
        (["solve", EXAMPLE, "--tol", "nan"], "argument --tol: expected a number > 0"),
        (["solve", EXAMPLE, "--max-states", "0"], "argument --max-states: expected an integer >= 1, got '0'"),
        (["solve", EXAMPLE, "--method", "cholesky"], "argument --method: invalid choice: 'cholesky'"),
        (["solve"], "the following arguments are required: MODEL"),
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_input_exits_2_with_one_line_on_stderr(capsys, args, expected):
    code, out, err = run(capsys, *args)

    assert code == 2
    assert out == ""
    assert_one_line_error(err)
    assert expected in err


def test_malformed_yaml_gives_the_line(capsys, malformed):
    code, out, err = run(capsys, "solve", malformed)

    assert code == 2
    assert_one_line_error(err)
    assert f"{malformed}:3:" in err and "invalid YAML" in err


def test_a_pipeline_error_is_bad_input_too(capsys, fake_pipeline):
    fake_pipeline.fail = StateSpaceLimitError("more than 10 tangible states (raise --max-states)")

    code, out, err = run(capsys, "solve", EXAMPLE, "--max-states", "10")

    assert code == 2
    assert err == "spn: error: more than 10 tangible states (raise --max-states)\n"


def test_an_unexpected_error_exits_1_with_a_hint(capsys, fake_pipeline, monkeypatch):
    monkeypatch.delenv("SPN_DEBUG", raising=False)
    fake_pipeline.fail = RuntimeError("boom\nsecond line")

    code, out, err = run(capsys, "solve", EXAMPLE)

    assert code == 1
    assert_one_line_error(err)
    assert "RuntimeError: boom second line" in err and "SPN_DEBUG=1" in err


def test_spn_debug_shows_the_traceback(capsys, fake_pipeline, monkeypatch):
    monkeypatch.setenv("SPN_DEBUG", "1")
    fake_pipeline.fail = RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        main(["solve", EXAMPLE])


# --------------------------------------------------------------------------
# spn schema, spn --version
# --------------------------------------------------------------------------


def test_schema_prints_the_json_schema(capsys):
    code, out, err = run(capsys, "schema")

    assert code == 0 and err == ""
    assert json.loads(out) == schema()


def test_version(capsys):
    code, out, err = run(capsys, "--version")

    assert code == 0
    assert out.startswith("spn ")


def test_the_spn_script_leaves_its_objects_out_of_the_exits_sweep(capsys, monkeypatch):
    # the process ends right after: collecting Numba's and SciPy's objects at the exit cost 0.15-0.25 s
    import gc

    from spn.cli import command

    monkeypatch.setattr(sys, "argv", ["spn", "--version"])
    try:
        assert command() == 0 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert capsys.readouterr().out.startswith("spn ")


# --------------------------------------------------------------------------
# spn solve, with a fake pipeline
# --------------------------------------------------------------------------


def test_solve_passes_the_description_and_settings_to_the_pipeline(capsys, fake_pipeline):
    code, out, err = run(
        capsys, "solve", EXAMPLE, "--set", "workload.users=5", "--set", "phases.map.tasks=10",
        "--method", "gmres", "--tol", "1e-8", "--max-states", "5000", "--json",
    )

    assert code == 0, err
    [(source, settings, options)] = fake_pipeline.calls
    assert (source, settings) == (EXAMPLE, ["workload.users=5", "phases.map.tasks=10"])
    budget = options["budget"]
    assert (options["method"], budget.rtol, budget.max_states, budget.progress) == ("gmres", 1e-8, 5000, False)


def test_solve_defaults(capsys, fake_pipeline):
    run(capsys, "solve", EXAMPLE)

    [(source, settings, options)] = fake_pipeline.calls
    budget = options["budget"]
    assert options["method"] == "auto" and budget.rtol == 1e-10 and budget.max_states == 2_000_000
    assert budget.max_seconds == 30 and options["question"].percentiles == ()
    assert budget.progress is False  # stderr is not a terminal under pytest


def test_solve_json_prints_exactly_the_report(capsys, fake_pipeline):
    code, out, err = run(capsys, "solve", EXAMPLE, "--json")

    assert code == 0
    assert out == json.dumps(REPORT, indent=2) + "\n"
    assert err == ""


def test_solve_prints_a_readable_table(capsys, fake_pipeline):
    code, out, err = run(capsys, "solve", EXAMPLE)

    assert code == 0
    assert out == format_distribution(REPORT) + "\n"
    for text in ["mapreduce", "13.336 s", "0.12823 jobs/s", "43.17 %", "1,234", "5,678", "direct", "converged"]:
        assert text in out


def test_the_table_says_loudly_when_the_solver_did_not_converge():
    report = json.loads(json.dumps(REPORT))
    report["solver"]["converged"] = False

    assert "NOT CONVERGED" in format_report(report)


def test_solve_writes_no_file(capsys, fake_pipeline, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    run(capsys, "solve", EXAMPLE, "--json")

    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------
# A real process
# --------------------------------------------------------------------------


def test_process_bad_input_exits_2_without_traceback():
    done = run_process("solve", EXAMPLE, "--set", "cluster.containers=-3")

    assert done.returncode == 2
    assert done.stdout == ""
    assert_one_line_error(done.stderr)
    assert "cluster.containers: expected an integer >= 1, got -3" in done.stderr


def test_process_missing_file_and_bad_tol():
    assert run_process("solve", "nosuch.yaml").returncode == 2
    done = run_process("solve", EXAMPLE, "--tol", "-1")
    assert done.returncode == 2
    assert_one_line_error(done.stderr)


def test_process_schema_prints_valid_json():
    done = run_process("schema")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


# --------------------------------------------------------------------------
# The real pipeline (skipped until spn.analysis.solve can be imported)
# --------------------------------------------------------------------------


def real_pipeline():
    return pytest.importorskip(
        "spn.analysis.solve",
        reason="spn.analysis.solve (the lead's solve pipeline) cannot be imported yet",
        exc_type=ImportError,
    )


def test_real_solve_json_has_the_documented_keys():
    real_pipeline()

    done = run_process("solve", EXAMPLE, "--json")

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(REPORT) <= set(result)
    assert set(REPORT["solver"]) <= set(result["solver"])
    assert set(REPORT["timings"]) <= set(result["timings"])
    for key in ("mean_execution_time", "throughput", "utilization"):
        assert math.isfinite(result[key]) and result[key] > 0
    assert 0 < result["utilization"] <= 1
    assert result["tangible_states"] >= 1 and result["transitions"] >= 1
    assert result["solver"]["converged"] is True
    assert (result["users"], result["think_time"], result["containers"]) == (3, 10.0, 4)
    # Little's law ties the numbers together: X = N / (R + Z)
    assert result["throughput"] == pytest.approx(3 / (result["mean_execution_time"] + 10.0), rel=1e-6)


def test_real_solve_table(capsys):
    real_pipeline()

    code, out, err = run(capsys, "solve", EXAMPLE, "--set", "cluster.containers=8")

    assert code == 0, err
    assert "mean execution time" in out
    assert re.search(r"^containers \(C\) +8$", out, re.MULTILINE)
