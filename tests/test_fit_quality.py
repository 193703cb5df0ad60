"""Fits that say how good they are (issue 28, part 3): every phase's Erlang law is tested against its own
task times (KS distance, a p-value corrected for the fitting, a verdict at 1 %), the verdict is kept in the
model, a rejected law is warned about, and ``spn fit --report`` prints it all, one row per phase.

Synthetic samples and logs (seeded) give known answers; the real logs (``../shared/data``, SPN_DATA overrides)
are read where they are, and those tests skip without them.
"""

import os
from pathlib import Path

import numpy as np
import pytest
import yaml

from spn.cli import main
from spn.fit import fit_logs
from spn.fit.erlang import (MIN_TEST_SAMPLES, REJECT_LEVEL, erlang_samples, fit_erlang_mle, fit_phase, fit_pooled,
                            fit_quality)
from spn.fit.write import fit_report
from tests.test_logmodel import job, stage, write_spark_log

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
Q26 = DATA / "lundstrom" / "q26_e12_application_1481182872654_0289.json.gz"

#: the keys a fitted stage phase keeps under reference.phases.<name>
QUALITY_KEYS = {"samples", "ks_distance", "ks_p_value", "ks_p_value_kstest", "bootstrap_replicates", "verdict",
                "law_rejected"}


def bimodal(n=200, seed=3):
    """Half the tasks near 1 s, half near 5 s: no single Erlang describes them."""
    return np.concatenate([erlang_samples(30, 1.0, n // 2, seed=seed), erlang_samples(30, 5.0, n - n // 2, seed=seed + 1)])


# --------------------------------------------------------------------------
# The test itself
# --------------------------------------------------------------------------


def test_a_sample_drawn_from_an_erlang_fits_it():
    quality = fit_phase(erlang_samples(3, 2.0, 500, seed=11)).quality
    assert quality.samples == 500 and quality.verdict == "ok"
    assert quality.ks_p_value > REJECT_LEVEL and 0 < quality.ks_distance < 0.1


def test_the_corrected_p_value_rejects_about_as_often_as_its_level_says():
    # the kstest p-value ignores that the law was fitted to the sample, so it almost never rejects a true
    # Erlang; the bootstrap's p is uniform under the null: at 10 %, about 6 of 60 true samples are rejected
    p_values = [fit_phase(erlang_samples(4, 1.0, 100, seed=seed)).quality for seed in range(60)]
    corrected = sum(q.ks_p_value < 0.10 for q in p_values)
    optimistic = sum(q.ks_p_value_kstest < 0.10 for q in p_values)
    assert 1 <= corrected <= 14, corrected
    assert optimistic <= corrected


def test_durations_on_a_millisecond_clock_are_not_rejected_for_their_ties():
    # 4 ms tasks logged in whole milliseconds take a dozen values: the ties alone put D far from a continuous
    # law's; the bootstrap rounds its samples to the same clock, so a true Erlang is not rejected for them
    x = np.maximum(np.round(erlang_samples(3, 0.004, 300, seed=0), 3), 0.0005)
    assert len(np.unique(x)) < 20
    quality = fit_phase(x).quality
    assert quality.verdict == "ok", quality
    unrounded = fit_quality(x, fit_erlang_mle(x, 1000), max_shape=1000, tick=None)
    assert unrounded.verdict == "rejected" and quality.ks_p_value_kstest < REJECT_LEVEL


def test_a_bimodal_sample_is_rejected():
    quality = fit_phase(bimodal()).quality
    assert quality.verdict == "rejected" and quality.rejected
    assert quality.ks_p_value < REJECT_LEVEL and quality.ks_distance > 0.2


def test_fewer_than_five_samples_get_no_verdict():
    for n in range(1, MIN_TEST_SAMPLES):
        quality = fit_phase(bimodal(8)[:n]).quality
        assert quality.verdict == "too few samples" and quality.ks_p_value is None and quality.samples == n
    assert fit_phase(bimodal(8)[:MIN_TEST_SAMPLES]).quality.ks_p_value is not None


def test_the_bootstrap_is_deterministic():
    x = erlang_samples(2, 1.0, 50, seed=1)
    fit = fit_erlang_mle(x, 1000)
    assert fit_quality(x, fit, max_shape=1000) == fit_quality(x, fit, max_shape=1000)


def test_a_fit_tested_again_is_not_drawn_again(monkeypatch):
    # the bootstrap draws from the fit alone: what-if models of one pilot test the same fits again and again
    import spn.fit.erlang as erlang

    x = erlang_samples(3, 1.0, 80, seed=7)
    fit = fit_erlang_mle(x, 1000)
    first = fit_quality(x, fit, max_shape=1000, seed=5)
    monkeypatch.setattr(erlang, "_ks_of_rows", None)     # drawing again would fail
    assert fit_quality(x, fit, max_shape=1000, seed=5) == first


def test_pooled_runs_are_tested_as_they_were_fitted():
    # each run scaled to its own mean: runs at means 1 and 3 of one Erlang(5) fit; two modes pooled raw do not
    runs = [erlang_samples(5, 1.0, 150, seed=1), erlang_samples(5, 3.0, 150, seed=2)]
    assert fit_pooled(runs).quality.verdict == "ok"
    assert fit_phase(np.concatenate(runs)).quality.verdict == "rejected"


# --------------------------------------------------------------------------
# In the model, the warnings and spn fit --report
# --------------------------------------------------------------------------


def quality_log(path):
    """A Spark log of one job on 4 cores: stage 0 Erlang(3) tasks, stage 1 bimodal, stage 2 three tasks."""
    def tasks(durations_s, start):
        slots, out = [start] * 4, []
        for d in durations_s:
            i = int(np.argmin(slots))
            ms = max(1, int(round(d * 1000)))
            out.append((slots[i], slots[i] + ms))
            slots[i] += ms
        return out

    s0 = stage(0, tasks(erlang_samples(3, 0.5, 120, seed=7), 100), name="scan")
    end0 = max(b for _, b in s0["tasks"])
    s1 = stage(1, tasks(bimodal(), end0 + 10), parents=[0], name="shuffle")
    end1 = max(b for _, b in s1["tasks"])
    s2 = stage(2, tasks([0.4, 0.5, 0.45], end1 + 10), parents=[1], name="collect")
    end2 = max(b for _, b in s2["tasks"])
    return write_spark_log(path, [job(0, [s0, s1, s2], submit=0, complete=end2 + 20)], end=end2 + 50, cores=4)


def test_the_model_keeps_each_phase_verdict_and_warns_about_the_rejected_law(tmp_path):
    model = fit_logs([quality_log(tmp_path / "app.json")])
    phases = model.description["reference"]["phases"]
    for name in ("stage-0", "stage-1", "stage-2"):
        assert QUALITY_KEYS <= set(phases[name]), sorted(phases[name])
    assert phases["stage-0"]["verdict"] == "ok" and phases["stage-0"]["law_rejected"] is False
    assert phases["stage-1"]["verdict"] == "rejected" and phases["stage-1"]["law_rejected"] is True
    assert phases["stage-2"]["verdict"] == "too few samples" and phases["stage-2"]["ks_p_value"] is None
    assert phases["stage-1"]["samples"] == 200 and phases["stage-1"]["ks_distance"] > 0.2
    # one warning, for the rejected phase, naming it with its distance, p-value and samples
    (warning,) = model.law_warnings
    assert warning.startswith("stage-1: Erlang(") and "rejected" in warning and "KS D 0." in warning
    assert "p <= 0.001" in warning and "200 samples" in warning and "--empirical" in warning
    assert "\n" not in warning
    text = model.to_yaml()
    assert "fit quality: KS D" in text and "rejected at 1 %" in text and "too few to test" in text


def test_an_empirical_model_does_not_warn_about_the_erlang_it_does_not_use(tmp_path):
    model = fit_logs([quality_log(tmp_path / "app.json")], empirical=True)
    phase = model.description["reference"]["phases"]["stage-1"]
    assert phase["verdict"] == "rejected" and phase["law_rejected"] is False and not model.law_warnings


def test_spn_fit_report_prints_a_row_per_phase_and_warns_on_stderr(tmp_path, capsys):
    log = quality_log(tmp_path / "app.json")
    out = tmp_path / "model.yaml"
    assert main(["fit", str(log), "-o", str(out), "--report"]) == 0
    captured = capsys.readouterr()
    description = yaml.safe_load(out.read_text())
    lines = captured.out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("phase "))
    for word in ("tasks", "samples", "mean s", "law", "KS D", "p", "verdict", "cap"):
        assert word in lines[header]
    rows = {line.split()[0]: line for line in lines[header + 2: header + 2 + len(description["phases"])]}
    assert set(rows) == {p["name"] for p in description["phases"]}
    assert "ok" in rows["stage-0"] and "rejected" in rows["stage-1"] and "too few samples" in rows["stage-2"]
    assert "Erlang(" in rows["stage-1"] and "200" in rows["stage-1"]
    assert [line for line in captured.err.splitlines() if line.startswith("spn: warning: stage-1: Erlang(")]
    # the provenance keys are in the written model
    assert QUALITY_KEYS <= set(description["reference"]["phases"]["stage-1"])


def test_the_report_goes_to_stderr_when_the_model_goes_to_stdout(tmp_path, capsys):
    assert main(["fit", str(quality_log(tmp_path / "app.json")), "--report"]) == 0
    captured = capsys.readouterr()
    assert yaml.safe_load(captured.out)["phases"]           # stdout is the model alone
    assert "verdict" in captured.err and "rejected at 1 %" in captured.err


def test_the_report_shows_what_the_shape_cap_changed():
    # Erlang(50) data fitted under a cap of 5: the data ask 50 and the cap's wider law has a later p95
    phase_fit = fit_phase(erlang_samples(50, 2.0, 300, seed=2), max_shape=5)
    ref = {"kind": "stage", "mean_s": phase_fit.fit.mean, "shape": 5, "shape_uncapped": phase_fit.uncapped_shape,
           **phase_fit.quality.as_dict()}
    description = {"phases": [{"name": "stage-0", "tasks": 300, "task_time": phase_fit.fit.mean, "shape": 5}],
                   "reference": {"phases": {"stage-0": ref}}}
    row = fit_report(description).splitlines()[2]
    assert f"data ask {phase_fit.uncapped_shape}: p95 +" in row and "rejected" in row


@pytest.mark.skipif(not Q26.is_file(), reason=f"the lundstrom logs are not at {Q26.parent} (set SPN_DATA)")
def test_the_shuffle_stage_of_a_real_tpcds_run_is_rejected():
    model = fit_logs([Q26])
    phases = model.description["reference"]["phases"]
    assert phases["stage-3"]["verdict"] == "rejected" and phases["stage-3"]["samples"] == 500
    assert phases["stage-0"]["verdict"] == "too few samples"   # 2 tasks
    assert any(line.startswith("stage-3: ") for line in model.law_warnings)
