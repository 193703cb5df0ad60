"""One evaluation pipeline for every command: source -> configuration -> question -> method -> result.

``spn solve``, ``predict``, ``plan``, ``sweep`` and the SAN column of ``baseline`` all call
:func:`evaluate`, so one question gets one number (the same seed gives the same simulation)
whichever command asks it:

1. **source** (:mod:`spn.pipeline.source`): a description file, or logs fitted with the what-if rules;
2. **configuration**: ``settings`` as ``KEY=VALUE`` (``--set`` paths, Spark keys);
3. **question** (:class:`Question`): the mean, throughput and utilisation always; percentiles and
   P(R <= deadline) when asked;
4. **method** (:mod:`spn.pipeline.methods`): the most exact method that applies and whose
   predicted cost fits the :class:`Budget` (``max_seconds`` bounds the whole evaluation);
5. **result** (:class:`Result`): ``summary()`` is the table, ``as_dict()`` the JSON.

>>> result = evaluate("models/mapreduce.yaml")
>>> result.method, round(result.mean_execution_time, 3)
('exact', 13.336)
>>> evaluate("models/mapreduce.yaml", ["workload.users=1"], question=Question(percentiles=(95,))).percentiles
{95.0: ...}
"""

from __future__ import annotations

import sys
import time

from spn.exceptions import ModelError
from spn.pipeline.methods import METHODS, Skipped, method_named
from spn.pipeline.question import Budget, Clock, Question
from spn.pipeline.result import Result
from spn.pipeline.source import configure

__all__ = ["evaluate", "evaluate_description", "configure", "Question", "Budget", "Result", "METHODS", "Skipped"]


def evaluate(source, settings=(), *, question: Question | None = None, budget: Budget | None = None,
             method: str = "auto") -> Result:
    """Answer ``question`` about ``source`` configured by ``settings``, within ``budget``.

    ``source``: a description file (.yaml/.json), a mapping, a parsed description, or a list of logs
    (with Spark keys among ``settings``: the what-if rules). ``method``: ``auto`` (the most exact
    method that fits), ``exact``, ``job-alone``, ``simulation``, or a steady-state solver's name.
    Returns a :class:`Result`; raises :class:`~spn.exceptions.ModelError` (one line) when the
    source, a setting or the method named cannot answer.
    """
    started = time.perf_counter()
    desc = configure(source, settings)
    return evaluate_description(desc, question=question, budget=budget, method=method, started=started)


def evaluate_description(desc, *, question: Question | None = None, budget: Budget | None = None,
                         method: str = "auto", started: float | None = None) -> Result:
    """:func:`evaluate` of a parsed description (what every command's loop calls)."""
    from dataclasses import replace

    from spn.pipeline.notices import gate_notice, think_time_problem

    question = question or Question()
    budget = budget or Budget()
    clock = Clock(budget.max_seconds)
    if started is not None:
        clock.started = started
    problem = None if desc.classes else think_time_problem(desc)
    if problem:
        raise ModelError(problem, option="set")
    candidates = method_named(method)
    reasons = []
    for candidate in candidates:
        why = candidate.applies(desc, question) or candidate.fits(desc, budget)
        if why is None:
            try:
                result = candidate.run(desc, question, budget, clock, "; ".join(reasons) or None)
            except Skipped as skipped:
                if len(candidates) == 1 and skipped.__cause__ is not None:
                    raise skipped.__cause__ from None     # the method named: its own error, as it said it
                why = str(skipped)
            except MemoryError:
                if len(candidates) == 1:
                    raise
                why = "it ran out of memory"
            else:
                notices = list(result.notices)
                if not desc.classes:
                    notice = gate_notice(desc, result.utilization)
                    if notice:
                        notices.append(notice)
                return replace(result, notices=tuple(notices), deadline=question.deadline,
                               seconds=time.perf_counter() - clock.started)
            if budget.progress and sys.stderr.isatty():       # it started: say why it stopped
                print(f"\r\033[Kspn: {candidate.name} stopped: {why}", file=sys.stderr, flush=True)
        if len(candidates) == 1:     # the method named cannot answer: its own limit is the option to change
            raise ModelError(f"method {method}: {why}", option="max_states" if candidate.name == "exact" else "method")
        reasons.append(f"not {candidate.name}: {why}")
    raise ModelError("no method answers: " + "; ".join(reasons), option="method")
