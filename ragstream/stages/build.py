"""The Prompt Builder stage: the final prompt, with whole excerpts read back from the project's documents.

One path: the build calls no model.
"""

from __future__ import annotations

from ragstream.errors import RetrievalError
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
    from ragstream.rendering.excerpts import Sources
    from ragstream.tenancy.projects import project_paths

    project = env.context.project or sp.extras.project
    if not project:
        blocks, report = build(sp, env.services.budget, Sources(None, env.services.settings))
        return StageOutput(updates=dict(blocks), report=report)
    root = project_paths(env.services.settings, project).source_dir()
    try:
        stored = env.services.searcher(project).snapshot().document_text
    except RetrievalError:  # no committed index: excerpts stay as the chunks were indexed
        stored = None
    blocks, report = build(sp, env.services.budget, Sources(root, env.services.settings, stored))
    return StageOutput(updates=dict(blocks), report=report)
