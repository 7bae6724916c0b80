"""Imports only go downward: a module never imports (at run time) from a layer above its own."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ragstream"
# Lowest first. A module may import from its own layer and the layers below: the state knows no stage
# logic, the stages' algorithms (preprocessing, shaping, gate, condensing, retrieval, rendering) know no
# stage module, the stage modules (stages/: each stage's spec and run, the registry and its rules) know
# no graph, the graph (orchestration/) knows no surface (app/); evaluation/ drives a controller a surface
# hands it, so it sits between the two.
LAYERS: list[set[str]] = [
    {
        "errors",
        "settings",
        "strategies",
        "secrets",
        "storage",
        "tenancy",
        "text",
        "tokens.counters",
        "embedding.model_files",
        "embedding.onnx_model",
        "embedding.bert_graph",
    },
    {"state"},
    {"embedding", "text.chunking", "code"},
    {"memory", "telemetry", "tokens"},
    {"preprocessing", "ingestion", "index", "retrieval", "llm", "shaping", "gate", "condensing", "rendering"},
    {"services"},
    {"stages"},
    {"orchestration"},
    {"evaluation"},
    {"app"},
]


def _layer(module: str) -> int:
    parts = module.split(".")
    for depth in (2, 1):
        key = ".".join(parts[:depth])
        for level, names in enumerate(LAYERS):
            if key in names:
                return level
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def _runtime_imports(path: Path, type_checking: bool = False) -> list[str]:
    """ragstream modules imported at module level or in functions, skipping TYPE_CHECKING blocks unless asked."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if not type_checking and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ragstream."):
            found.append(node.module.removeprefix("ragstream."))
        elif isinstance(node, ast.ImportFrom) and node.module == "ragstream":
            found += [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name.removeprefix("ragstream.") for a in node.names if a.name.startswith("ragstream.")]
    return found


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
        if module != "__init__":  # the package's lazy re-exports
            found.append((module, path))
    return found


def test_imports_only_go_downward() -> None:
    upward = []
    for module, path in _modules():
        mine = _layer(module)
        upward += [f"{module} -> {target}" for target in _runtime_imports(path) if _layer(target) > mine]
    assert upward == []


def test_no_import_cycle_among_packages() -> None:
    """Between packages (and top-level modules), counting imports made only for type checking too."""
    edges: dict[str, set[str]] = {}
    for module, path in _modules():
        mine = module.split(".")[0]
        targets = {target.split(".")[0] for target in _runtime_imports(path, type_checking=True)}
        edges.setdefault(mine, set()).update(targets - {mine})
    cycles: list[list[str]] = []
    state: dict[str, str] = {}

    def visit(package: str, path: list[str]) -> None:
        state[package] = "open"
        for target in sorted(edges.get(package, ())):
            if state.get(target) == "open":
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[package] = "done"

    for package in sorted(edges):
        if package not in state:
            visit(package, [package])
    assert cycles == []
