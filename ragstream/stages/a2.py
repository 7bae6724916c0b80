"""The A2 PromptShaper stage: the prompt's labels, from the body the user's words left open.

One path: A2's offline judgment rests on the user's words alone, declared as keyword rules in its agent
config (`x-cues`), which the local provider applies when the runner (`services.runner`) has no model.
"""

from __future__ import annotations

from ragstream.stages.io import StageEnv, StageOutput
from ragstream.stages.spec import LABELS, PROMPT, stage_spec
from ragstream.state import A2Report, SuperPrompt

SPEC = stage_spec("a2", "A2 PromptShaper", "preprocess", "A2 needs a preprocessed prompt", {PROMPT}, {LABELS}, True)
REPORT = A2Report


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[A2Report]:
    from ragstream.shaping.prompt_shaper import fixed_fields, shape

    body, report = shape(sp.body, fixed_fields(sp), env.services.runner)
    return StageOutput(updates={"body": body}, report=report)
