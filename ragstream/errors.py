"""One exception hierarchy, so every surface (CLI, GUI, graph) can catch `RagstreamError`
and show a readable message instead of a traceback."""

from __future__ import annotations


class RagstreamError(Exception):
    """Base of every error RAGstream raises on purpose."""


class InputError(RagstreamError):
    """The user's input cannot be processed as given."""


class EmptyPromptError(InputError):
    """The prompt is empty or whitespace only: there is nothing to shape or retrieve for."""


class PromptTooLargeError(InputError):
    """The prompt exceeds the configured maximum size."""


class ConfigError(RagstreamError):
    """A configuration file or setting is missing, malformed or inconsistent."""


class StageOrderError(RagstreamError):
    """A stage was requested before its prerequisites ran; the SuperPrompt is left unchanged."""

    def __init__(self, target: str, reached: str, requirement: str) -> None:
        self.target = target
        self.reached = reached
        self.requirement = requirement
        super().__init__(
            f"stage '{target}' cannot run now: {requirement} (the run has reached '{reached}')"
        )
