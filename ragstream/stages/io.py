"""What a stage's `run` gets and returns: the services, the run's options and input; a typed output.

Apart from `RunOptions` (`ragstream.stages.options`), whose validation needs the registry's rules: a
stage module imports this one, and the registry imports the stage modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ragstream.state import Report

if TYPE_CHECKING:
    from ragstream.memory.conversation import ConversationMemory
    from ragstream.services import Services
    from ragstream.stages.options import RunOptions


@dataclass(frozen=True)
class StageEnv:
    """What a stage function gets besides the SuperPrompt: the services, the run's options and input.

    `prompt` is the text a run was started with (the graph's input); None when a stage re-runs.
    `run_memory` is the conversation memory of the run's user (a server run's); None means the local user's.
    """

    services: Services
    context: RunOptions
    prompt: str | None = None
    run_memory: ConversationMemory | None = None

    @property
    def memory(self) -> ConversationMemory:
        return self.run_memory or self.services.memory


R = TypeVar("R", bound=Report)


@dataclass(frozen=True)
class StageOutput(Generic[R]):
    """What a stage function returns: the SuperPrompt fields it computed, its report, its selection view.

    The stage never advances the stage or renders the prompt: the graph applies the output in one place.
    `StageOutput[A2Report]` says which report a stage records (its field in `Extras`).
    """

    updates: dict[str, Any] = field(default_factory=dict)
    report: R | None = None
    selection: list[str] | None = None
