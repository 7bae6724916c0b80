"""The A5 Format Enforcer stage: the output format the Prompt Builder renders."""

from __future__ import annotations

from ragstream.shaping.format_enforcer import enforce
from ragstream.shaping.prompt_shaper import fixed_fields
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import A5Report, SuperPrompt


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[A5Report]:
    return StageOutput(report=enforce(sp.body, env.services.runner, depth_given="depth" in fixed_fields(sp)))
