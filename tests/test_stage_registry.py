"""The stages agree: the Stage enum, the Extras model and the controller follow the one tuple of stage modules."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import get_args, get_type_hints

import pytest

import ragstream
from ragstream import stages
from ragstream.app.session import RunSession
from ragstream.orchestration import graph
from ragstream.stages import REGISTRY, SPECS, STAGES, stage_module
from ragstream.stages.spec import SELECTION
from ragstream.state import Extras, Report, Stage
from ragstream.state.stage import LEGACY_NAMES, NAMES, ORDER, SELECTING


def test_the_enum_lists_the_stage_modules_in_order_after_raw() -> None:
    assert ORDER[0] is Stage.RAW
    names = [stage.__name__.removeprefix("ragstream.stages.") for stage in STAGES]  # type: ignore[attr-defined]
    assert [stage.node for stage in ORDER[1:]] == names == [spec.name for spec in REGISTRY] == list(NAMES)
    assert all(stage_module(stage) is module for stage, module in zip(ORDER[1:], STAGES, strict=True))


def test_every_stage_module_declares_its_report_as_its_extras_field_and_its_run_returns_it() -> None:
    for module in STAGES:
        name = module.SPEC.name
        assert Extras.model_fields[name].annotation == module.REPORT | None
        (report,) = get_args(get_type_hints(module.run)["return"])
        assert report is module.REPORT


def test_extras_holds_one_report_per_stage_besides_the_run_records() -> None:
    stage_fields = [name for name in Extras.model_fields if name not in ("project", "edits")]
    assert stage_fields == list(NAMES)
    for name in stage_fields:
        report = Extras.model_fields[name].annotation.__args__[0]  # type: ignore[union-attr]
        assert issubclass(report, Report) and report.__name__ == f"{name.capitalize()}Report"
        assert Extras.model_fields[name].default is None


def test_selecting_stages_are_the_stages_that_write_the_selection() -> None:
    assert SELECTING == tuple(Stage(spec.name).value for spec in REGISTRY if SELECTION in spec.writes)


def test_every_stage_reads_by_all_its_names() -> None:
    for stage in ORDER:
        assert Stage(stage.value) is stage and Stage(stage.node) is stage
    for old, value in LEGACY_NAMES.items():
        assert Stage(old) is Stage(value)
    with pytest.raises(ValueError):
        Stage("nonsense")


def test_every_manual_stage_has_its_controller_method() -> None:
    assert SPECS["preprocess"].method == "preprocess"
    for spec in REGISTRY:
        assert callable(getattr(RunSession, spec.method)), spec.method


def test_each_graph_node_is_a_function_of_its_stage_name_that_calls_its_stage_run() -> None:
    """Go-to-definition from a Studio node name lands on its function, and from there on the stage's `run`."""
    assert [node.__name__ for node in graph.STAGE_NODES] == list(NAMES)
    for node, module in zip(graph.STAGE_NODES, STAGES, strict=True):
        assert getattr(graph, module.SPEC.name) is node
        call = ast.unparse(ast.parse(inspect.getsource(node)).body[0].body[-1])  # type: ignore[attr-defined]
        assert f"stages.{module.SPEC.name}.run" in call, call


def test_nothing_on_the_registry_path_is_loaded_by_name_or_built_at_run_time() -> None:
    """Go-to-definition finds every stage, its function, its report and its controller method."""
    root = Path(ragstream.__file__).parent
    paths = [root / "app" / "controller.py", *(root / "stages").glob("*.py"), *(root / "state").glob("*.py")]
    found = [
        f"{word} in {path.relative_to(root)}"
        for path in paths
        for word in ("importlib", "setattr(", "create_model", "globals()", "Enum(", "__name__ =")
        if word in path.read_text(encoding="utf-8")
    ]
    graph_source = (root / "orchestration" / "graph.py").read_text(encoding="utf-8")
    found += [f"{word} in graph.py" for word in ("importlib", "setattr(", "RUNS", "def _node") if word in graph_source]
    assert found == []
    assert stages.__name__ == "ragstream.stages" and stages.Stage is Stage  # checkpoints name the enum there
