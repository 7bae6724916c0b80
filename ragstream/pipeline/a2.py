"""The A2 PromptShaper stage: the prompt's labels, from the body the user's words left open."""

from __future__ import annotations

from ragstream.shaping.prompt_shaper import fixed_fields, shape
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import A2Report, SuperPrompt


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[A2Report]:
    body, report = shape(sp.body, fixed_fields(sp), env.services.runner)
    return StageOutput(updates={"body": body}, report=report)
