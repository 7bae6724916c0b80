"""What a served run must pass before it exists: checked when the server is asked to create it.

The LangGraph server writes a run's input into the thread's checkpoint before the first node runs, so
a run refused by a node has already moved the thread (a pause lost, a bad value stored). Checked here,
from the server's auth handler for `threads.create_run`, a refused run never starts: the thread keeps
its values, its history and its pause. The graph's own preflight checks the same again.
"""

from __future__ import annotations

from typing import Any

from ragstream.errors import InputError
from ragstream.index.manifest import indexed_project
from ragstream.preprocessing import validate_prompt
from ragstream.settings import Settings
from ragstream.stages.options import RunOptions
from ragstream.tenancy.users import User


def admit_run(settings: Settings, user: User, graph_input: Any, context: Any) -> RunOptions:
    """The run's options, or the typed error that refuses it: bad input or options, a project the user
    may not use (before saying whether it exists), a project with no index."""
    options = RunOptions.coerce(context or None)
    if graph_input is not None:
        if not isinstance(graph_input, dict):
            raise InputError(
                f'the run input must be an object {{"prompt": "..."}} or null, not {type(graph_input).__name__}'
            )
        unknown = sorted(set(graph_input) - {"prompt"})
        if unknown:
            raise InputError(f"unknown run input keys {unknown}: use ['prompt']")
        if graph_input.get("prompt") is not None:
            validate_prompt(graph_input["prompt"], settings, served=True)
    named = [p for p in (options.project, *options.projects) if p is not None]
    for project in named:  # every project first: refusals never say which projects exist
        user.require_project(project)
    for project in named:
        indexed_project(settings, project)
    return options
