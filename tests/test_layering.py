"""The package layering of docs/design.md, read from the imports of every module (AST, imports
inside functions included): core imports nothing of roundtrip, metrics only core, no evaluation
imports another, and no module imports itself back through a cycle."""
import ast
from pathlib import Path

import pytest
from conftest import REPO

SRC = REPO / "src"

#: package -> the roundtrip packages it may import (itself always allowed).
ALLOWED = {
    "core": set(),
    "metrics": {"core"},
    "api": {"core"},
    "render": {"core"},
    "tables": {"core", "metrics"},
    "models": {"core", "api"},
    "readers": {"core", "api"},
    "datasets": {"core", "api", "render", "readers", "metrics"},
    "stages": {"core", "models", "readers", "datasets", "metrics"},
    # an evaluation writes its report findings and headline figure with the report's helpers
    "evals": {"core", "metrics", "models", "readers", "datasets", "stages", "tables", "api",
              "report"},
    "report": {"core", "metrics", "tables"},
    # the workflow finds the evaluations through the registry (roundtrip.core.evaluation),
    # never by import: a sixth evaluation needs no edit of the shared code
    "workflow": {"core", "metrics", "models", "readers", "datasets", "stages", "tables", "api",
                 "render", "report"},
    "cli": {"core", "workflow"},  # check-config runs the workflow's checks
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Absolute names of the roundtrip modules ``path`` imports (relative ones resolved)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "roundtrip"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "roundtrip":
                continue
            for alias in node.names:  # "from roundtrip.evals import chd" imports a module
                sub = f"{mod}.{alias.name}"
                found.add(sub if sub in MODULES else mod)
    return found


MODULES = {module_name(p): p for p in (SRC / "roundtrip").rglob("*.py")}
GRAPH = {m: imports_of(p) for m, p in MODULES.items()}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_graph_is_read():
    assert "roundtrip.core.manifest" in GRAPH["roundtrip.core.recon_items"]
    assert "roundtrip.core.evaluation" in GRAPH["roundtrip.workflow.plan"]
    assert "roundtrip.evals.chd.plan" in GRAPH["roundtrip.evals.chd.spec"]
    assert len(MODULES) > 60


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_packages_import_only_lower_layers(package):
    bad = sorted((m, i) for m, deps in GRAPH.items() if layer(m) == package
                 for i in deps if layer(i) not in ALLOWED[package] | {package, ""})
    assert not bad, f"{package} may import only {sorted(ALLOWED[package])}: {bad}"


def test_every_package_has_a_layer():
    assert {layer(m) for m in MODULES} - {""} <= set(ALLOWED)


def test_no_evaluation_imports_another():
    def evaluation(module):
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[1] == "evals" else None

    bad = sorted((m, i) for m, deps in GRAPH.items() if evaluation(m)
                 for i in deps if evaluation(i) and evaluation(i) != evaluation(m))
    assert not bad, bad


def test_no_import_cycle():
    """Tarjan's strongly connected components of the module graph: all of size one, and no
    module imports itself."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, ()):
            if w not in MODULES:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in GRAPH.get(v, ()):
                cycles.append(sorted(comp))

    for v in MODULES:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_a_cycle_would_be_found(monkeypatch):
    """The cycle check can fail: a planted back edge core.imaging -> core.recon_items is caught."""
    monkeypatch.setitem(GRAPH, "roundtrip.core.imaging",
                        GRAPH["roundtrip.core.imaging"] | {"roundtrip.core.recon_items"})
    with pytest.raises(AssertionError):
        test_no_import_cycle()


#: Layers every evaluation shares: they name no paper (docstrings may cite one).
SHARED = ("core", "metrics", "models", "readers", "render", "api", "tables", "report",
          "workflow")
#: Words that name an evaluation's paper.
PAPER_WORDS = ("vtbench", "medibench", "vista", "telephone", "cmms")


def test_shared_layers_define_nothing_named_for_a_paper():
    """No function, class, method or module-level name of a shared layer names a paper; the
    paper's own code lives in its evaluation package."""
    named = []
    for module, path in MODULES.items():
        if layer(module) not in SHARED or not path.name.endswith(".py"):
            continue
        tree = ast.parse(path.read_text())
        names = [n.name for n in ast.walk(tree)
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        names += [t.id for n in tree.body if isinstance(n, ast.Assign)
                  for t in n.targets if isinstance(t, ast.Name)]
        named += [f"{module}.{n}" for n in names if any(w in n.lower() for w in PAPER_WORDS)]
    assert not named, named


def test_shared_layers_import_no_evaluation():
    bad = sorted((m, i) for m, deps in GRAPH.items() if layer(m) in SHARED
                 for i in deps if layer(i) == "evals")
    assert not bad, bad

