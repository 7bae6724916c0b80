"""The hand-written lists of stages agree: the Stage enum, the Extras model, the registry and the controller."""

from __future__ import annotations

from pathlib import Path
from typing import get_args, get_type_hints

import pytest

import ragstream
from ragstream.app.session import RunSession
from ragstream.pipeline import RUNS
from ragstream.stages import REGISTRY, SELECTION, SPECS
from ragstream.state import Extras, Report, Stage
from ragstream.state.stage import LEGACY_NAMES, NAMES, ORDER, SELECTING


def test_the_enum_lists_the_registry_in_order_after_raw() -> None:
    assert ORDER[0] is Stage.RAW
    assert [stage.node for stage in ORDER[1:]] == [spec.name for spec in REGISTRY] == list(NAMES)


def test_every_stage_has_one_adapter_whose_report_is_its_extras_field() -> None:
    assert list(RUNS) == list(ORDER[1:])
    for stage, run in RUNS.items():
        assert run.__name__ == "run" and run.__module__ == f"ragstream.pipeline.{stage.node}"
        (report,) = get_args(get_type_hints(run)["return"])
        assert Extras.model_fields[stage.node].annotation == report | None


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


def test_nothing_on_the_registry_path_is_loaded_by_name_or_built_at_run_time() -> None:
    """Go-to-definition finds every stage, its function, its report and its controller method."""
    root = Path(ragstream.__file__).parent
    paths = [root / "stages.py", root / "app" / "controller.py", *(root / "pipeline").glob("*.py")]
    paths += [*(root / "state").glob("*.py")]
    found = [
        f"{word} in {path.relative_to(root)}"
        for path in paths
        for word in ("importlib", "setattr(", "create_model", "globals()", "Enum(")
        if word in path.read_text(encoding="utf-8")
    ]
    assert found == []
