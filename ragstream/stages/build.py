"""The Prompt Builder stage: the final prompt, with whole excerpts read back from the project's documents.

One path: the build calls no model.
"""

from __future__ import annotations

from ragstream.stages.io import StageEnv, StageOutput
from ragstream.stages.spec import CONDENSED, FINAL, FORMAT, FORMAT_SPEC, LABELS, PROMPT, SELECTION, stage_spec
from ragstream.state import BuildReport, SuperPrompt

SPEC = stage_spec(
    "build",
    "Prompt Builder",
    "a4",
    "the Prompt Builder needs the condensed context",
    {PROMPT, LABELS, FORMAT, SELECTION, CONDENSED, FORMAT_SPEC},
    {FINAL},
    fields=("system_md", "prompt_md", "attachments_md"),
    method="build_prompt",
)
REPORT = BuildReport


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[BuildReport]:
    from ragstream.rendering.builder import build
    from ragstream.stages.sources import project_sources

    blocks, report = build(sp, env.services.budget, project_sources(sp, env))
    return StageOutput(updates=dict(blocks), report=report)
