"""The A5 Format Enforcer stage: the output format the Prompt Builder renders.

One path: A5's offline judgment rests on the user's words alone, declared as keyword rules in its agent
config (`x-cues`), which the local provider applies when the runner (`services.runner`) has no model.
"""

from __future__ import annotations

from ragstream.stages.io import StageEnv, StageOutput
from ragstream.stages.spec import FORMAT, FORMAT_SPEC, LABELS, stage_spec
from ragstream.state import A5Report, SuperPrompt

SPEC = stage_spec(
    "a5",
    "A5 Format Enforcer",
    "a4",
    "the Format Enforcer runs after the Condenser",
    {LABELS, FORMAT},
    {FORMAT_SPEC},
    skippable=True,
)
REPORT = A5Report


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[A5Report]:
    from ragstream.shaping.format_enforcer import enforce
    from ragstream.shaping.prompt_shaper import fixed_fields

    return StageOutput(report=enforce(sp.body, env.services.runner, depth_given="depth" in fixed_fields(sp)))
