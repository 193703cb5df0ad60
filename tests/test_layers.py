"""The packages' layering (docs/design.md §2): data flows one way, a step never imports a later one.

Every import of every module of ``spn`` is read with :mod:`ast`, at module level and inside
functions alike (a function-level import is a dependency too, only a late one). Two rules:

- no import cycle between the modules of ``spn.analysis``;
- a package imports only packages of lower layers (below), never an upper one, nor a sibling of
  its own layer (unless :data:`SIBLINGS` allows it).

What breaks a rule today is listed in :data:`EXCEPTIONS`, each with the reason it is not fixed yet;
an exception that no longer happens fails the test too, so that the list stays true.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "spn"

#: lowest first; the packages (or modules) of one layer are siblings
LAYERS = (
    # ``spn`` itself: its public names are imported on first use by name (importlib), which no layer
    # sees; what it imports at once is spn.exceptions, and ``import spn`` (for __version__) is cheap
    ("spn", "spn.exceptions", "spn.defaults", "spn.limits", "spn.kernels", "spn.threads"),
    ("spn.description",),
    ("spn.net",),
    ("spn.io",),                # interchange of a Net (DOT, PNML, Storm) and the rule for output files
    ("spn.models",),
    ("spn.statespace",),
    ("spn.ctmc",),
    ("spn.solvers",),
    ("spn.measures",),
    ("spn.simulation", "spn.logs"),
    ("spn.fit", "spn.baselines"),
    ("spn.analysis",),
    ("spn.pipeline",),
    ("spn.studies",),           # questions over many configurations (plan, sweep, predict, compare, backtest)
    ("spn.report",),            # a run's logs as a page: asks spn.studies and spn.pipeline its questions
    ("spn.cli",),
)

#: imports between siblings of one layer that are allowed: (importer, imported)
SIBLINGS = {
    # the leaves: the package's error classes are the one thing it imports at once; size limits raise them
    ("spn", "spn.exceptions"),
    ("spn.limits", "spn.exceptions"),
    # pieces of one answer side by side, on as many threads as the process has cores
    ("spn.threads", "spn.limits"),
    # the baselines compare against the model spn fit makes (fit never reads the baselines)
    ("spn.baselines", "spn.fit"),
}

#: the imports that break a rule today, (importer prefix, imported prefix) -> why it stays for now
EXCEPTIONS = {
    # the one convenience the other way, by design (docs/design.md §2): StateSpace.generator() calls spn.ctmc
    ("spn.statespace.space", "spn.ctmc"):
        "StateSpace.generator() builds its chain's generator with spn.ctmc (documented)",
    # spn.kernels compiles the Numba kernels of the engines that import it (to ask whether they are
    # compiled): warm() imports those engines to compile them, in a background process. Fixing it means
    # each engine registering its own warm-up with spn.kernels (statespace and simulation: other owners).
    ("spn.kernels", "spn.net"): "kernels' warm-up builds a small net to compile the explorer",
    ("spn.kernels", "spn.statespace"): "kernels' warm-up compiles spn.statespace.compiled",
    ("spn.kernels", "spn.simulation"): "kernels' warm-up compiles spn.simulation.cluster_compiled",
    # spn baseline's SAN column is the pipeline's answer: a command above the pipeline too, but the
    # engine of spn baseline stays with the baselines it compares: spn.baselines re-exports its names
    # (compare_logs, Target, METHODS...), so moving it into spn.studies changes the baselines' public face
    ("spn.baselines.compare", "spn.pipeline"): "spn baseline's SAN column is evaluate_description's answer",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py")) if "__pycache__" not in p.parts}


def _resolve(name: str) -> str | None:
    """The module of ``spn`` that ``name`` (a module, or a name inside one) is defined in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports() -> dict[str, dict[str, int]]:
    """module -> {imported module of spn: first line}, module-level and function-level imports alike."""
    graph: dict[str, dict[str, int]] = defaultdict(dict)
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[:len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                # "from spn.analysis import solve" imports the module solve; "from spn.x import name" the module x
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                           for alias in node.names]
            for target in targets:
                if target == "spn" or target.startswith("spn."):
                    resolved = _resolve(target)
                    if resolved and resolved != module:
                        graph[module].setdefault(resolved, node.lineno)
    return graph


GRAPH = _imports()


def _group(module: str) -> tuple[int, str]:
    """(layer index, the layer entry holding ``module``), the longest entry that matches."""
    best = None
    for k, layer in enumerate(LAYERS):
        for entry in layer:
            inside = module == entry or (entry != "spn" and module.startswith(entry + "."))
            if inside and (best is None or len(entry) > len(best[1])):
                best = (k, entry)
    if best is None:
        raise AssertionError(f"{module} is in no layer of tests/test_layers.py: place it in LAYERS")
    return best


def _excepted(importer: str, imported: str):
    for (low, high), why in EXCEPTIONS.items():
        if (importer == low or importer.startswith(low + ".")) and (imported == high or imported.startswith(high + ".")):
            return low, high
    return None


def _breaks(importer: str, imported: str) -> str | None:
    """Why importing ``imported`` from ``importer`` breaks the layering, or None."""
    (mine, my_entry), (theirs, their_entry) = _group(importer), _group(imported)
    if theirs > mine:
        return f"{my_entry} (layer {mine}) imports {their_entry} (layer {theirs}), an upper layer"
    if theirs == mine and my_entry != their_entry and (my_entry, their_entry) not in SIBLINGS:
        return f"{my_entry} imports its sibling {their_entry} (same layer)"
    return None


def test_every_module_has_a_layer():
    for module in MODULES:
        _group(module)


def test_modules_are_found_with_their_function_level_imports():
    # a function-level import counts: alone's job_alone imports the analytic laws inside the function
    assert "spn.description.model" in GRAPH["spn.analysis.alone"]
    assert "spn.analysis.alone" in GRAPH["spn.pipeline.methods"]      # JobAlone.run, inside the method
    assert len(MODULES) > 100


def _cycles(nodes) -> list[list[str]]:
    """The strongly connected components of more than one module among ``nodes`` (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, {}):
            if w not in nodes:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_inside_analysis():
    analysis = {m for m in MODULES if m == "spn.analysis" or m.startswith("spn.analysis.")}
    cycles = _cycles(analysis)
    assert not cycles, "import cycles in spn.analysis: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_lower_layers_do_not_import_upper_ones():
    broken, used = [], set()
    for importer, imported in sorted(GRAPH.items()):
        for target, line in sorted(imported.items()):
            why = _breaks(importer, target)
            if why is None:
                continue
            exception = _excepted(importer, target)
            if exception is not None:
                used.add(exception)
                continue
            broken.append(f"{MODULES[importer].relative_to(ROOT.parent)}:{line}: {importer} -> {target}: {why}")
    assert not broken, "\n".join(broken)
    stale = sorted(set(EXCEPTIONS) - used)
    assert not stale, f"exceptions that no longer happen (remove them from EXCEPTIONS): {stale}"


@pytest.mark.parametrize("importer, imported, broken", [
    ("spn.solvers.passage", "spn.analysis.solve", True),         # up
    ("spn.fit.order", "spn.baselines.sparklens", True),          # a sibling, not allowed
    ("spn.baselines.compare", "spn.fit.logs", False),            # a sibling, allowed
    ("spn.analysis.solve", "spn.models.jobs", False),            # down
    ("spn.statespace.space", "spn.ctmc", True),                  # up (an exception, listed)
    ("spn.pipeline.prediction", "spn.studies.backtest", True),   # up: the studies are above the pipeline
    ("spn.studies.predict", "spn.studies.backtest", False),      # inside one package
])
def test_the_rules_themselves(importer, imported, broken):
    assert (_breaks(importer, imported) is not None) is broken
