"""``spn solve`` (a description exactly, or by simulation past the state budget; a PNML net) and ``spn schema``."""

from __future__ import annotations

import sys

from spn.cli import _args
from spn.cli.format import format_distribution, format_net_report
from spn.exceptions import SpnError


def register(commands) -> None:
    solve = commands.add_parser(
        "solve",
        help="solve a model description (exactly, or by simulation past the state budget)",
        description="Solve a model description and report the mean execution time: exactly as a CTMC when "
                    "its chain fits --max-states, otherwise by simulation to a 95 % confidence interval "
                    "(the output says which).",
    )
    _args.add_model(solve)
    _args.add_set(solve, "override a value, e.g. workload.users=5, cluster.containers=8, phases.map.tasks=10 "
                         "(repeatable)")
    _args.add_solver_options(
        solve, methods=_args.METHODS + ("exact", "job-alone", "decomposition", "simulation"),
        method_help="auto (default): the most exact method that fits --max-states and --max-seconds (the exact "
                    "CTMC, then the job-alone bounds for one user, then the decomposition under fifo and fair "
                    "when its error is within --rel-precision, then simulation); exact, job-alone, decomposition, "
                    "simulation: that method or an error; a solver name (direct, gmres, ...): the CTMC with "
                    "that solver, or an error",
        max_states_help="the exact method's budget: past N tangible states, --method auto simulates and the "
                        "others stop (default: %(default)s)")
    _args.add_distribution(solve)
    solve.add_argument("--rel-precision", type=_args.positive_float, default=None, metavar="E",
                       help="when simulating: relative half-width of the 95 %% interval of the mean execution "
                            "time (default: 0.005)")
    solve.add_argument("--max-seconds", type=_args.positive_float, default=None, metavar="T",
                       help="the whole evaluation's time budget: an exact chain projected past it is left for "
                            "another method, and a simulation stops with the interval reached (default: 30)")
    _args.add_seed(solve)
    solve.set_defaults(run=run_solve)

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of model descriptions",
        description="Print the JSON Schema (draft 2020-12) that model descriptions must satisfy.",
    )
    schema.set_defaults(run=run_schema)


def run_solve(args) -> int:
    """``spn solve``: description -> :func:`spn.pipeline.evaluate` -> its table (or JSON) on stdout."""
    if str(args.model).lower().endswith(".pnml"):
        return _solve_pnml(args)
    from spn.pipeline import evaluate

    result = evaluate(args.model, args.set, question=_args.question(args), budget=_args.budget(args),
                      method=args.method)
    out = result.as_dict()
    if out.get("method") == "simulation" and not out["precision_met"]:
        print(f"spn: warning: simulated ({out['engine']} engine): relative half-width "
              f"{100 * out['rel_half_width']:.3g} % is above {100 * out['rel_precision']:g} % after "
              f"{out['replications']:,} replications (raise --max-seconds or --rel-precision)", file=sys.stderr)
    _args.print_result(args, out, format_distribution)
    return 0


def _exact_only(args, what: str) -> dict:
    """The solver options of a path that has no simulation: ``--method exact`` is ``auto`` there."""
    if args.method in ("simulation", "job-alone"):
        from spn.exceptions import ModelError

        raise ModelError(f"--method {args.method}: {what} needs the exact CTMC")
    options = _args.solver_options(args)
    if options["method"] == "exact":
        options["method"] = "auto"
    return options


def _solve_pnml(args) -> int:
    """``spn solve net.pnml``: a plain net written by another tool; mean tokens and throughputs."""
    if args.set:
        raise SpnError("--set applies to model descriptions, not to PNML nets")
    from spn.analysis.solve import solve_net
    from spn.io.pnml import load_pnml

    result = solve_net(load_pnml(args.model), **_exact_only(args, "a PNML net")).as_dict()
    _args.print_result(args, result, format_net_report)
    return 0


def run_schema(args) -> int:
    """``spn schema``: the JSON Schema of model descriptions."""
    from spn.description import schema

    _args.print_json(schema())
    return 0
