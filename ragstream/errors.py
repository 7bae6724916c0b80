"""One exception hierarchy, so every surface (CLI, GUI, graph) can catch `RagstreamError`
and show a readable message instead of a traceback.

The LangGraph server hides the message of any exception that is not a builtin such as `ValueError`
or `RuntimeError` ("An internal error occurred"), so the hierarchy derives from those two: input
problems are `ValueError`s, everything else a `RuntimeError`, and SDK and Studio clients see the
type name and the real message. Messages never carry secrets (LLM errors are redacted).
"""

from __future__ import annotations


class RagstreamError(RuntimeError):
    """Base of every error RAGstream raises on purpose."""


class InputError(RagstreamError, ValueError):
    """The user's input cannot be processed as given."""


class EmptyPromptError(InputError):
    """The prompt is empty or whitespace only: there is nothing to shape or retrieve for."""


class PromptTooLargeError(InputError):
    """The prompt exceeds the configured maximum size."""


class ConfigError(RagstreamError, ValueError):
    """A configuration file or setting is missing, malformed or inconsistent."""


class StageOrderError(RagstreamError):
    """A stage was requested before its prerequisites ran; the SuperPrompt is left unchanged."""

    def __init__(self, target: str, reached: str, requirement: str) -> None:
        self.target = target
        self.reached = reached
        self.requirement = requirement
        super().__init__(f"stage '{target}' cannot run now: {requirement} (the run has reached '{reached}')")


class AgentConfigError(ConfigError):
    """An agent config file is malformed or internally inconsistent."""


class UnknownAgentConfigError(AgentConfigError):
    """No config file exists for the requested agent name and version."""


class AgentInputError(RagstreamError, ValueError):
    """An agent was given an input payload that its config does not accept."""


class AgentPromptValidationError(RagstreamError):
    """The LLM's output could not be parsed or does not match the agent's output schema."""


class AgentReplyError(AgentPromptValidationError):
    """The model's reply stayed invalid after repair and one re-ask with the validation error."""

    def __init__(self, message: str, *, reply: object = None) -> None:
        self.reply = reply  # the last reply (its tokens were spent)
        super().__init__(message)


class LLMError(RagstreamError):
    """An LLM call failed; the message never contains the API key."""


class LLMNotConfiguredError(LLMError, InputError):
    """A real LLM is needed but no provider key or base URL is configured (the request cannot be met as given)."""


class LLMCallError(LLMError):
    """The provider kept failing (after the configured retries) or refused the request."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        self.status = status
        self.attempts = attempts
        super().__init__(message)


class LLMTimeoutError(LLMCallError):
    """The provider did not answer within the deadline, on every attempt."""


class ProjectError(InputError):
    """A project name is invalid, or the project does not exist."""


class IngestionError(RagstreamError):
    """Ingestion could not complete; the previous index stays in use."""


class RetrievalError(RagstreamError):
    """Every retriever failed, or the project has no index to search."""


class IndexVectorsError(RetrievalError):
    """A project's stored vectors cannot be compared with the query's: another embedding width, or NaN values."""
