"""Where a stage reads a project's documents back from: its folder, else the index generation's copy.

A4 and the Prompt Builder both read excerpts whole from the documents; one place says where they come from.
"""

from __future__ import annotations

from ragstream.errors import RetrievalError
from ragstream.rendering.excerpts import Sources
from ragstream.stages.io import StageEnv
from ragstream.state import SuperPrompt


def project_sources(sp: SuperPrompt, env: StageEnv) -> Sources:
    """The run's project documents (none without a project: chunks stay as indexed)."""
    from ragstream.tenancy.projects import project_paths

    settings = env.services.settings
    project = env.context.project or sp.extras.project
    if not project:
        return Sources(None, settings)
    root = project_paths(settings, project).source_dir()
    try:
        stored = env.services.searcher(project).snapshot().document_text
    except RetrievalError:  # no committed index: excerpts stay as the chunks were indexed
        stored = None
    return Sources(root, settings, stored)
