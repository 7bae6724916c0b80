"""The Prompt Builder stage: the final prompt, with whole excerpts read back from the project's documents."""

from __future__ import annotations

from ragstream.errors import RetrievalError
from ragstream.rendering.builder import build
from ragstream.rendering.excerpts import Sources
from ragstream.stage_io import StageEnv, StageOutput
from ragstream.state import BuildReport, SuperPrompt
from ragstream.tenancy.projects import project_paths


def run(sp: SuperPrompt, env: StageEnv) -> StageOutput[BuildReport]:
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
