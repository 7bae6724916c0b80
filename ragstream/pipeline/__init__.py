"""The stage adapters: one module per stage, each with one `run(state, env) -> StageOutput[<its report>]`.

An adapter reads what its stage needs from the SuperPrompt and the run's services, calls the stage's
logic (preprocessing/, agents/, retrieval/, rendering/), and returns the stage's output; it never
advances the stage or renders the prompt (the graph applies every output in one place). `RUNS` is
the registry's other half: `ragstream.stages.REGISTRY` says what each stage reads, writes and needs,
`RUNS` which function computes it (tests/test_stage_registry.py checks the two agree).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragstream.pipeline import a2, a3, a4, a5, build, preprocess, rerank, retrieval
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import Stage, SuperPrompt

StageRun = Callable[[SuperPrompt, StageEnv], StageOutput[Any]]

RUNS: dict[Stage, StageRun] = {
    Stage.PREPROCESS: preprocess.run,
    Stage.A2: a2.run,
    Stage.RETRIEVAL: retrieval.run,
    Stage.RERANK: rerank.run,
    Stage.A3: a3.run,
    Stage.A4: a4.run,
    Stage.A5: a5.run,
    Stage.BUILD: build.run,
}
