"""``spn solve`` (a description exactly, or by simulation past the state budget; a PNML net) and ``spn schema``."""

from __future__ import annotations

import sys

from spn.cli import _args
from spn.cli.format import format_distribution, format_net_report, format_report
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
        solve, methods=_args.METHODS + ("exact", "simulation"),
        method_help="auto (default): the exact CTMC if its chain fits --max-states, else simulation; exact: "
                    "the CTMC or an error; simulation: always simulate; a solver name (direct, gmres, ...): "
                    "the CTMC with that solver, or an error",
        max_states_help="the exact method's budget: past N tangible states, --method auto simulates and the "
                        "others stop (default: %(default)s)")
    _args.add_distribution(solve)
    solve.add_argument("--rel-precision", type=_args.positive_float, default=None, metavar="E",
                       help="when simulating: relative half-width of the 95 %% interval of the mean execution "
                            "time (default: 0.005)")
    solve.add_argument("--max-seconds", type=_args.positive_float, default=None, metavar="T",
                       help="when simulating: stop after T seconds with the interval reached (default: 60)")
    _args.add_seed(solve)
    solve.set_defaults(run=run_solve)

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of model descriptions",
        description="Print the JSON Schema (draft 2020-12) that model descriptions must satisfy.",
    )
    schema.set_defaults(run=run_schema)


def run_solve(args) -> int:
    """``spn solve``: description -> pipeline -> report on stdout."""
    if str(args.model).lower().endswith(".pnml"):
        return _solve_pnml(args)
    description = _args.description(args)
    if args.percentiles is not None or args.deadline is not None:
        return _solve_distribution(args, description)
    from spn.analysis.solve import solve_description

    options = _args.solver_options(args)
    if args.method in ("auto", "simulation"):    # a method that may simulate; unset options keep the library's
        options.update(fallback=True, seed=args.seed)
        options.update({key: value for key, value in (("rel_precision", args.rel_precision),
                                                       ("max_seconds", args.max_seconds)) if value is not None})
    result = solve_description(description, **options).as_dict()
    if result.get("method") == "simulation" and not result["precision_met"]:
        print(f"spn: warning: simulated ({result['engine']} engine): relative half-width "
              f"{100 * result['rel_half_width']:.3g} % is above {100 * result['rel_precision']:g} % after "
              f"{result['replications']:,} replications (raise --max-seconds or --rel-precision)", file=sys.stderr)
    _args.print_result(args, result, format_report)
    return 0


def _exact_only(args, what: str) -> dict:
    """The solver options of a path that has no simulation: ``--method exact`` is ``auto`` there."""
    if args.method == "simulation":
        from spn.exceptions import ModelError

        raise ModelError(f"--method simulation: {what} needs the exact CTMC (the simulation estimates the mean "
                         f"execution time only)")
    options = _args.solver_options(args)
    if options["method"] == "exact":
        options["method"] = "auto"
    return options


def _solve_distribution(args, description) -> int:
    """``spn solve`` with percentiles or a deadline: the report plus the tagged job's distribution."""
    from spn.analysis.evaluate import solve_with_distribution

    evaluation = solve_with_distribution(description, percentiles=args.percentiles or (), deadline=args.deadline,
                                         distribution=True, **_exact_only(args, "--percentiles/--deadline"))
    _args.print_result(args, evaluation.as_dict(), format_distribution)
    return 0


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
