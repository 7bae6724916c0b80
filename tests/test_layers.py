"""Imports only go downward: a module never imports (at run time) from a layer above its own."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ragstream"
# Lowest first. A module may import from its own layer and the layers below.
LAYERS: list[set[str]] = [
    {
        "errors",
        "settings",
        "stages",
        "state",
        "atomic",
        "redact",
        "secret_scan",
        "projects",
        "tokens",
        "model_files",
        "onnx_model",
        "lines",
        "users",
        "deferred_imports",
        "heap_snapshots",
    },
    {"embedding", "chunking", "code", "prompt_view", "stage_io", "retrieval.strategy"},
    {"context"},
    {"preprocessing", "ingestion", "retrieval", "agents"},
    {"services", "orchestration"},
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


def _runtime_imports(path: Path) -> list[str]:
    """ragstream modules imported at module level or in functions, skipping TYPE_CHECKING blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ragstream."):
            found.append(node.module.removeprefix("ragstream."))
        elif isinstance(node, ast.Import):
            found += [a.name.removeprefix("ragstream.") for a in node.names if a.name.startswith("ragstream.")]
    return found


def test_imports_only_go_downward() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".")
        if module in ("__init__",):
            continue  # the package's lazy re-exports
        mine = _layer(module)
        upward += [f"{module} -> {target}" for target in _runtime_imports(path) if _layer(target) > mine]
    assert upward == []
