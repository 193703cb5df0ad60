"""A fitted stage says when the order its tasks ran in made it shorter than independent draws would.

The model draws task times independently; a stage whose long tasks ran in the middle and short ones
at the end (a network-bound shuffle) took less time than its tasks replayed in random order, and the
model over-predicts it by about as much. ``spn fit`` notes such a stage (over 5 % and 1 s) above
its phase, with both replays' times.
"""

import os
from pathlib import Path

import pytest

from spn.cli import main
from spn.fit.order import order_effect, order_note
from spn.fit.scaling import pooled_template
from spn.logs.records import JobRecord, Run, StageRecord

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
Q26_E24 = sorted((DATA / "lundstrom").glob("q26_e24_*.json.gz"))
Q26_E3 = sorted((DATA / "lundstrom").glob("q26_e3_*.json.gz"))

#: 4 slots, 16 tasks: short, long in the middle, short at the end (launch order)
MIDDLE_HEAVY = [1.0] * 4 + [6.0] * 8 + [1.0] * 4


def spark_run(durations, *, slots=4, how="executors x cores"):
    stage = StageRecord((5,), "shuffle", len(durations), tuple(durations), ())
    return Run("app.json", "app", "spark", (JobRecord((0,), (stage,), 0.0, ()),), 0.0, 0, slots, how, 30.0)


def test_the_launch_order_replay_is_the_greedy_schedule_by_hand():
    # each slot: 1 s, then two 6 s tasks (to 7, to 13), then 1 s: launch order 14 s
    in_order, shuffled = order_effect(MIDDLE_HEAVY, 4)
    assert in_order == 14.0
    # any order does 56 s of work on 4 slots, some end with a 6 s task; Graham: at most W/c + (1 - 1/c) p_max
    assert 14.0 < shuffled <= 56 / 4 + (1 - 1 / 4) * 6


def test_a_stage_of_one_wave_or_equal_tasks_has_no_order_effect():
    assert order_effect([3.0, 1.0], 2) == (3.0, 3.0)
    assert order_effect([2.0] * 9, 2) == (10.0, 10.0)
    assert order_effect([1.0] * 5, 0) is None


def test_the_fitted_stage_carries_the_note_with_both_times():
    phase = pooled_template([spark_run(MIDDLE_HEAVY)], method="mle", max_shape=10).jobs[0][1][0]
    (note,) = phase.notes
    in_order, shuffled = order_effect(MIDDLE_HEAVY, 4)
    assert f"takes {shuffled:.4g} s, {100 * (shuffled / in_order - 1):.0f} % longer" in note
    assert "replayed on 4 slots" in note and "launch order (14 s)" in note and "over-predicts this stage" in note


@pytest.mark.parametrize("run, why", [
    (spark_run([2.0] * 8), "equal tasks: every order is the same"),
    (spark_run([x / 100 for x in MIDDLE_HEAVY]), "the effect is under a second"),
    (spark_run(MIDDLE_HEAVY, slots=None), "no slot count to replay on"),
])
def test_no_note_where_the_order_says_nothing(run, why):
    assert pooled_template([run], method="mle", max_shape=10).jobs[0][1][0].notes == (), why


def test_no_note_on_tasks_carried_to_another_configuration():
    # a what-if run's tasks keep the pilot's order, which it had on the pilot's slots
    carried = pooled_template([spark_run(MIDDLE_HEAVY)], method="mle", max_shape=10, as_run=False)
    assert carried.jobs[0][1][0].notes == ()


def test_the_note_is_the_mean_over_the_runs():
    assert order_note([(10.0, 10.4), (10.0, 10.8)], 2) is None          # +6 %, but 0.6 s
    assert order_note([(100.0, 104.0), (100.0, 105.0)], 2) is None      # 4.5 s, but +4.5 %
    assert "takes 107 s, 7 % longer" in order_note([(100.0, 104.0), (100.0, 110.0)], 2)
    assert "takes 120 s, 20 % longer" in order_note([None, (100.0, 120.0)], 2)   # a run without slots aside


@pytest.mark.skipif(not (Q26_E24 and Q26_E3), reason=f"no lundstrom Q26 logs under {DATA}")
def test_a_what_if_fit_notes_no_order(tmp_path):
    out = tmp_path / "e24.yaml"
    assert main(["fit", *map(str, Q26_E3), "--what-if", "spark.executor.instances=24", "-o", str(out)]) == 0
    assert "order they ran in" not in out.read_text()
    # the pilot's own configuration is its measured run: its order is replayed
    same = tmp_path / "e24-as-run.yaml"
    assert main(["fit", *map(str, Q26_E24), "--what-if", "spark.executor.instances=24", "-o", str(same)]) == 0
    assert "order they ran in: replayed on 48 slots" in same.read_text()


@pytest.mark.skipif(not (Q26_E24 and Q26_E3), reason=f"no lundstrom Q26 logs under {DATA}")
def test_on_the_real_cluster_the_24_executor_shuffle_is_flagged_and_the_3_executor_one_is_not(tmp_path):
    for logs, flagged in ((Q26_E24, True), (Q26_E3, False)):
        out = tmp_path / f"{flagged}.yaml"
        assert main(["fit", *map(str, logs), "-o", str(out)]) == 0
        text = out.read_text()
        assert ("order they ran in: replayed on 48 slots" in text) is flagged
        if flagged:
            # only the 200-task shuffle-read stage, whose tasks fetch over the network
            before = text.split("order they ran in")[0].rsplit("# stage id(s)", 1)[1]
            assert before.startswith(" 5 ") and text.count("order they ran in") == 1
