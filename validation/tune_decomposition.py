"""The share of the gap between the fifo and birth-death chains that the decomposition states as its model
error (MODEL_ERROR_SHARE), chosen on a tuning grid that the validation never sees.

    python validation/tune_decomposition.py      # writes docs/decomposition-tuning.md

The tuning grid is drawn as validation/run_decomposition.py draws its grid (the same ranges: users 1-100,
containers 4-500, tasks 1-2,000, Erlang shapes 1-10, the four DAG shapes, fifo and fair, utilisation 10 %
to 120 %) from another seed (TUNING_SEED), with its own references (the compiled cluster simulator to ±0.3 %,
at most 40 s each, kept in validation/decomposition-tuning-references.json and reused). For each point,
the share of the gap the error needs: what of |R − reference| the X(k)'s propagated interval and the
reference's own half-width leave, over the gap. MODEL_ERROR_SHARE, for fifo and for fair, is the smallest
share that covers TUNING_COVERAGE of that policy's points and every small net whose R is exact (the
CTMC: those tests/test_decomposition.py checks), rounded up to a twentieth; the script says whether the
code's constants are those. Then validation/run_decomposition.py measures the stated interval on its own grid.

At its fifo points it also measures a job's percentiles as run_decomposition.py does (references kept in
validation/decomposition-tuning-percentile-references.json): the passage chain's design was compared on the
validation grid only; the move of its percentiles by a job's own law was chosen looking at both.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import subprocess
import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_decomposition as grid  # noqa: E402  (sets SPN_CACHE_DIR=off: every X(k) simulated)

ROOT = grid.ROOT
OUT = ROOT / "docs" / "decomposition-tuning.md"
TUNING_SEED = 20261128
TUNING_POINTS = 40
TUNING_REFERENCES = ROOT / "validation" / "decomposition-tuning-references.json"
TUNING_PERCENTILE_REFERENCES = ROOT / "validation" / "decomposition-tuning-percentile-references.json"
#: the fraction of the tuning points whose reference the stated interval must hold
TUNING_COVERAGE = 0.95


def needed_share(d, ref: dict) -> float | None:
    """The share of the gap the model error needs for the interval to hold the reference (None: no gap,
    the X(k) alone decide)."""
    gap = abs(d.oldest_two_mean - d.birth_death_mean)
    x_low, x_high = d.low + d.model_error, d.high - d.model_error      # the X(k)'s interval alone
    r, half = ref["ref"], ref["ref_half"]
    short = max(x_low - half - r, r - x_high - half, 0.0)
    if gap <= 0:
        return 0.0 if short == 0 else None
    return short / gap


def needed_percentile_shares(d, ref: dict) -> list:
    """As :func:`needed_share`, for each percentile: the share of its model-error scale
    (:meth:`~spn.analysis.decomposition.Decomposition.percentile_parts`) its interval needs to hold the reference."""
    shares = []
    for q in grid.PERCENTILES:
        t, x_low, x_high, scale = d.percentile_parts(q)
        r, half = ref["ref"][f"{q:g}"], ref["ref_half"][f"{q:g}"]
        short = max(x_low - half - r, r - x_high - half, 0.0)
        shares.append((0.0 if short == 0 else None) if scale <= 0 else short / scale)
    return shares


def small_nets() -> list:
    """Small nets whose X(k) and R are exact (the CTMC): MapReduce jobs of 3 + 2 tasks on 2 containers, and
    single-phase jobs of 4 to 8 tasks on 2 or 3 containers under fair (those of tests/test_decomposition.py)."""
    from spn.description import parse_description

    def desc(users, think, containers, phases, edges, policy):
        return parse_description({"name": "small", "workload": {"users": users, "think_time": think},
                                  "cluster": {"containers": containers}, "scheduler": {"policy": policy},
                                  "phases": phases, "edges": [list(e) for e in edges]})
    mapreduce = [{"name": "m", "tasks": 3, "task_time": 1.0, "shape": 2},
                 {"name": "r", "tasks": 2, "task_time": 1.5, "shape": 2}]
    nets = [desc(users, think, 2, mapreduce, [("m", "r")], policy)
            for policy in ("fifo", "fair") for users, think in ((2, 3.0), (3, 6.0))]
    nets += [desc(users, think, containers, [{"name": "p", "tasks": tasks, "task_time": 1.0, "shape": shape}], (),
                  "fair")
             for users, containers, tasks, shape, think in ((4, 2, 8, 1, 40.0), (4, 2, 8, 4, 40.0), (6, 2, 8, 4, 40.0),
                                                            (5, 3, 4, 3, 10.0))]
    return nets


def smallest_share(shares: list) -> float:
    """The smallest share, to a twentieth, at or above TUNING_COVERAGE of ``shares`` (None: a point no share
    holds, as the X(k) alone miss it).

    >>> smallest_share([0.01, 0.12, 0.3, None] + [0.0] * 16)     # 19 of 20: the 18th smallest of the 19 finite
    0.15
    """
    need = math.ceil(TUNING_COVERAGE * len(shares)) - sum(s is None for s in shares)
    finite = sorted(s for s in shares if s is not None)
    if need <= 0:
        return 0.0
    return math.ceil(20 * finite[need - 1] - 1e-9) / 20


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    subprocess.run([sys.executable, "-m", "spn.kernels"], check=True, capture_output=True)
    from spn.analysis.decomposition import MODEL_ERROR_SHARE, PERCENTILE_ERROR_SHARE, decompose

    cache = json.loads(TUNING_REFERENCES.read_text()) if TUNING_REFERENCES.exists() else {}
    percentile_cache = (json.loads(TUNING_PERCENTILE_REFERENCES.read_text())
                        if TUNING_PERCENTILE_REFERENCES.exists() else {})
    rows, shares, policies, percentile_rows, percentile_results, percentile_shares = [], [], [], [], [], []
    for point in grid.draw_grid(TUNING_POINTS, TUNING_SEED):
        desc = grid.description(point, grid.think_time_for(point))
        ref = grid.reference(desc, cache)
        TUNING_REFERENCES.write_text(json.dumps(cache, indent=0, sort_keys=True))
        d = decompose(desc, seed=0)
        share = needed_share(d, ref)
        shares.append(share)
        policies.append(point["policy"])
        error = d.mean / ref["ref"] - 1
        rows.append(f"| t{point['name'][1:]} | {point['shape']} | {point['policy']} | {point['users']} | "
                    f"{point['containers']} | {100 * ref['U']:.0f} | {ref['ref']:.5g} ± {100 * ref['ref_half'] / ref['ref']:.2f} % | "
                    f"{d.mean:.5g} | {100 * error:+.2f} | {100 * abs(d.oldest_two_mean - d.birth_death_mean) / d.mean:.2f} | "
                    f"{'—' if share is None else f'{share:.3f}'} |")
        print(rows[-1], flush=True)
        if point["policy"] == "fifo":
            percentile_results.append(grid.evaluate_percentiles(desc, percentile_cache))
            TUNING_PERCENTILE_REFERENCES.write_text(json.dumps(percentile_cache, indent=0, sort_keys=True))
            percentile_shares += needed_percentile_shares(percentile_results[-1]["decomposition"],
                                                          grid.percentile_reference(desc, percentile_cache))
            percentile_rows.append(grid.percentile_row(f"t{point['name'][1:]}", desc, percentile_results[-1]))
            print(percentile_rows[-1], flush=True)
    from spn.pipeline import evaluate_description

    exact_rows, exact_need = [], {"fifo": 0.0, "fair": 0.0}
    for desc in small_nets():
        d, exact = decompose(desc), evaluate_description(desc, method="exact").mean_execution_time
        gap = abs(d.oldest_two_mean - d.birth_death_mean)
        need = abs(d.mean - exact) / gap if gap > 0 else 0.0
        policy = desc.scheduler.policy
        exact_need[policy] = max(exact_need[policy], need)
        exact_rows.append(f"| {policy} | {desc.workload.users} | {desc.cluster.containers} | "
                          f"{'+'.join(str(p.tasks) for p in desc.phases)} | {exact:.5g} | {d.mean:.5g} | "
                          f"{100 * (d.mean / exact - 1):+.2f} | {100 * gap / d.mean:.2f} | {need:.3f} |")
    chosen, held = {}, {}
    for policy in ("fifo", "fair"):
        theirs = [s for s, p in zip(shares, policies) if p == policy]
        # the exact small nets are held too: their R has no noise
        chosen[policy] = max(smallest_share(theirs), math.ceil(20 * exact_need[policy] - 1e-9) / 20)
        held[policy] = (sum(s is not None and s <= MODEL_ERROR_SHARE[policy] for s in theirs), len(theirs))
    chosen["percentiles"] = smallest_share(percentile_shares)
    held_percentiles = sum(x is not None and x <= PERCENTILE_ERROR_SHARE for x in percentile_shares)
    text = [
        "# Tuning the decomposition's model error",
        "",
        f"Generated by `python validation/tune_decomposition.py` on {datetime.date.today()} (never edit by hand).",
        "",
        f"The decomposition states as its model error a share of the gap between its fifo and birth-death chains "
        f"(docs/design.md §5.8). This grid ({TUNING_POINTS} points, drawn from seed {TUNING_SEED} as "
        "`validation/run_decomposition.py` draws its own, with its own references: the compiled cluster simulator "
        f"to ±{100 * grid.REFERENCE_PRECISION:g} %) chooses the share; the validation grid never enters it. "
        "*needed* is the share of the gap the error needs beyond the X(k)'s propagated interval and the "
        "reference's half-width (— where there is no gap and the X(k) alone miss).",
        "",
        *(f"- {policy}: the smallest share, to a twentieth, that holds {100 * TUNING_COVERAGE:g} % of its "
          f"{held[policy][1]} points and every exact small net below: **{chosen[policy]:g}**; the code's `MODEL_ERROR_SHARE` is {MODEL_ERROR_SHARE[policy]:g}, "
          f"which holds {held[policy][0]} of them"
          + ("" if math.isclose(chosen[policy], MODEL_ERROR_SHARE[policy]) else " (NOT the share this grid chooses)")
          for policy in ("fifo", "fair")),
        "",
        "Small nets whose X(k) and R are exact (the CTMC; those of `tests/test_decomposition.py`), which the "
        "share must hold too:",
        "",
        "| policy | N | C | tasks | exact R (s) | decomposition R (s) | error % | gap % | needed |",
        "|---|---|---|---|---|---|---|---|---|",
        *exact_rows,
        "",
        "The tuning grid:",
        "",
        "| case | DAG | policy | N | C | U % | simulation R (s) | decomposition R (s) | error % | gap % | needed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## Percentiles under fifo",
        "",
        f"A percentile's stated error is a share of its model-error scale (the gap to processor sharing's "
        "percentile plus the gap between a job alone's Erlang in the chain and its own law) on each side, "
        "beyond the X(k)'s propagated interval. The smallest share, to a twentieth, that holds "
        f"{100 * TUNING_COVERAGE:g} % of the {len(percentile_shares)} percentiles below (p50, p90, p95 at each "
        f"point): **{chosen['percentiles']:g}**; the code's `PERCENTILE_ERROR_SHARE` is {PERCENTILE_ERROR_SHARE:g}, "
        f"which holds {held_percentiles} of them"
        + ("" if math.isclose(chosen["percentiles"], PERCENTILE_ERROR_SHARE) else " (NOT the share this grid chooses)")
        + ".",
        "",
        "A job's execution-time law under fifo (docs/design.md §5.8, item 4) at this grid's fifo points, measured "
        "as `docs/decomposition.md` measures it on the validation grid (where the passage chain's design was "
        "compared; the move of its percentiles by a job's own law was chosen looking at both grids): the "
        "compiled simulator with every job's time kept, to the mean's "
        f"±{100 * grid.REFERENCE_PRECISION:g} % or {grid.PERCENTILE_SECONDS:g} s (the percentile's own 95 % "
        "half-width shown); *stated* the half-width the method reports, NO where it misses the reference "
        "(widened by the reference's half-width).",
        "",
        *grid.percentile_summary(percentile_results),
        "",
        grid.PERCENTILE_HEADER,
        *percentile_rows,
        "",
    ]
    OUT.write_text("\n".join(text))
    print(f"chosen shares {chosen}; wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
