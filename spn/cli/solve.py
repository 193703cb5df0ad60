"""``spn solve`` (a description or a PNML net, analytically) and ``spn schema``."""

from __future__ import annotations

from spn.cli import _args
from spn.cli.format import format_distribution, format_net_report, format_report
from spn.exceptions import SpnError


def register(commands) -> None:
    solve = commands.add_parser(
        "solve",
        help="solve a model description analytically",
        description="Solve a model description as a CTMC and report the mean execution time.",
    )
    _args.add_model(solve)
    _args.add_set(solve, "override a value, e.g. workload.users=5, cluster.containers=8, phases.map.tasks=10 "
                         "(repeatable)")
    _args.add_solver_options(solve)
    _args.add_distribution(solve)
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

    result = solve_description(description, **_args.solver_options(args)).as_dict()
    _args.print_result(args, result, format_report)
    return 0


def _solve_distribution(args, description) -> int:
    """``spn solve`` with percentiles or a deadline: the report plus the tagged job's distribution."""
    from spn.analysis.plan import solve_with_distribution

    evaluation = solve_with_distribution(description, percentiles=args.percentiles or (), deadline=args.deadline,
                                         distribution=True, **_args.solver_options(args))
    _args.print_result(args, evaluation.as_dict(), format_distribution)
    return 0


def _solve_pnml(args) -> int:
    """``spn solve net.pnml``: a plain net written by another tool; mean tokens and throughputs."""
    if args.set:
        raise SpnError("--set applies to model descriptions, not to PNML nets")
    from spn.analysis.solve import solve_net
    from spn.io.pnml import load_pnml

    result = solve_net(load_pnml(args.model), **_args.solver_options(args)).as_dict()
    _args.print_result(args, result, format_net_report)
    return 0


def run_schema(args) -> int:
    """``spn schema``: the JSON Schema of model descriptions."""
    from spn.description import schema

    _args.print_json(schema())
    return 0
