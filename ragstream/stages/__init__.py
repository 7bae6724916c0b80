"""The stages: one module per stage, and the registry, which is the tuple of those modules.

A stage module owns everything about its stage: its `SPEC` (its name, label, gating rule, what it reads
and writes), its `REPORT` (the report it records, its field in `Extras`), and its `run(sp, env)`, which
chooses the stage's offline path or its path with a model once, on `env.services.offline`. Adding a stage
is adding its module to `STAGES` (with its `Stage` member and its `Extras` field; tests/test_stage_registry.py
checks the three agree). The graph gives each stage a node function of the stage's name that calls its
`run` (`ragstream.orchestration.graph`); the rules over the registry are in `ragstream.stages.rules`.

The stage modules import their algorithms where their functions use them, so the registry imports no model,
index or graph; it does import the state's pydantic reports, which is why the CLI reads it only once a command
runs or lists its stage choices (`ragstream.app.cli.common.StageChoices`), never for `ragstream --help`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ragstream.errors import InputError
from ragstream.stages import a2, a3, a4, a5, build, preprocess, rerank, retrieval
from ragstream.stages.spec import StageSpec
from ragstream.state.stage import Stage as Stage
from ragstream.state.stage import rank

if TYPE_CHECKING:
    from ragstream.stages.io import StageEnv, StageOutput
    from ragstream.state import Report, SuperPrompt

# `Stage` is defined with the state (`ragstream.state.stage`) and importable from here too: checkpoints of
# earlier versions name the enum `ragstream.stages.Stage`.


class StageModule(Protocol):
    """What every module of `STAGES` provides (mypy checks each module against it)."""

    @property
    def SPEC(self) -> StageSpec: ...  # noqa: N802

    @property
    def REPORT(self) -> type[Report]: ...  # noqa: N802

    def run(self, sp: SuperPrompt, env: StageEnv) -> StageOutput[Any]: ...


STAGES: tuple[StageModule, ...] = (preprocess, a2, retrieval, rerank, a3, a4, a5, build)

REGISTRY: tuple[StageSpec, ...] = tuple(stage.SPEC for stage in STAGES)
SPECS: dict[str, StageSpec] = {spec.name: spec for spec in REGISTRY}
SKIPPABLE: frozenset[str] = frozenset(spec.name for spec in REGISTRY if spec.skippable)


def stage_module(stage: Stage) -> StageModule:
    """The module of `stage` (for a caller that holds a stage, not a name it can jump to: a run of one stage)."""
    if stage is Stage.RAW:
        raise InputError("'raw' is the starting state, not a stage to run")
    return STAGES[rank(stage) - 1]
