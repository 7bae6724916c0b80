"""AppController: the name the first releases documented, now a RunSession and a Workspace under one object.

New code holds a `RunSession` (one thread: runs, review, send, history, trace) and a `Workspace` (projects,
documents, ingest, agents, models, users) itself. This composition only keeps the old calls working: a
name is looked up on the session, then on the workspace; a call that returns a RunResult gives its state,
as the controller's calls gave the SuperPrompt, and `send` gives the Answer.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from ragstream.app.session import RunResult, RunSession
from ragstream.app.workspace import Workspace
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.stages.options import RunOptions
from ragstream.state import Answer, SuperPrompt
from ragstream.telemetry.otel import OtelSpans


class AppController:
    def __init__(
        self,
        settings: Settings | None = None,
        *,
        thread_id: str | None = None,
        checkpointer: BaseCheckpointSaver | None = None,
        services: Services | None = None,
    ) -> None:
        self.workspace = Workspace(settings, services)
        self.session = RunSession(self.workspace, thread_id=thread_id, checkpointer=checkpointer)

    @property
    def sp(self) -> SuperPrompt:
        return self.session.current().state

    @property
    def paused_before(self) -> list[str]:
        return self.session.current().paused_before

    @property
    def waiting(self) -> dict[str, Any] | None:
        return self.session.current().waiting

    def send(self, on_token: Callable[[str], None] | None = None) -> Answer:
        answer = self.session.send(on_token).state.answer
        assert answer is not None  # the session's send checks it
        return answer

    def create_project(self, project_name: str) -> dict[str, Any]:
        return self.session.select_project(self.workspace.create_project(project_name))

    def save_document(self, file_name: str, data: bytes, project_name: str | None = None) -> Path:
        return self.workspace.save_document(file_name, data, project_name or self.session.active_project)

    # What callers set on the controller belongs to the session.
    def _set_on_event(self, value: Callable[[dict[str, Any]], None] | None) -> None:
        self.session.on_event = value

    def _set_options(self, value: RunOptions) -> None:
        self.session.options = value

    def _set_spans(self, value: OtelSpans | None) -> None:
        self.session.spans = value

    def _set_thread_id(self, value: str) -> None:
        self.session.thread_id = value

    on_event = property(lambda self: self.session.on_event, _set_on_event)
    options = property(lambda self: self.session.options, _set_options)
    spans = property(lambda self: self.session.spans, _set_spans)
    thread_id = property(lambda self: self.session.thread_id, _set_thread_id)

    def __getattr__(self, name: str) -> Any:
        for part in (self.__dict__["session"], self.__dict__["workspace"]):
            if hasattr(part, name):
                found = getattr(part, name)
                return _state_of(found) if inspect.ismethod(found) else found
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _state_of(call: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(call)
    def state_of(*args: Any, **kwargs: Any) -> Any:
        result = call(*args, **kwargs)
        return result.state if isinstance(result, RunResult) else result

    return state_of
