"""What a stage function gets and returns: the run's options, the services, a typed output.

The controller builds a `RunContext`; the LangGraph server hands the graph whatever JSON the client
sent. Both go through `RunContext.coerce`, so a bad value is an `InputError` naming the field, the
same error whichever door it came through, before any stage does work.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ragstream.errors import InputError
from ragstream.retrieval.strategy import Strategy
from ragstream.stages import PAUSE_POLICIES, pause_points, validate_skip
from ragstream.state import Report

if TYPE_CHECKING:
    from ragstream.services import Services

HISTORY_PROFILES = ("none", "recent", "relevant")


@dataclass(init=False)
class RunContext:
    """Per-run options and services; never part of the checkpointed state.

    `manual` marks a single stage run by hand (the controller's `step`), which may start without a
    project; an auto run needs its project before the first stage runs. The constructor accepts any
    keys, because LangGraph builds this from the client's JSON before any RAGstream code runs:
    unknown keys are kept aside and reported by `validate` as an InputError.
    """

    project: str | None = None
    strategy: str | None = None
    skip: list[str] = field(default_factory=list)
    include_undecided: bool | None = None
    history_profile: str | None = None
    manual: bool = False
    send: bool = False  # after the build, answer the prompt with the configured LLM (and its critic)
    pause_after: str | list[str] = "a4"  # where an auto run stops for a person's review (`pause_points`)
    strict: bool = False  # headers PreProcessing could not map wait for a person's decision

    def __init__(self, services: Services | None = None, **values: Any) -> None:
        # `services` is an attribute, not a field: it is no client's to send, and stays out of the
        # context's JSON schema (the form Studio shows).
        self.services = services
        for f in fields(self):
            default = f.default_factory() if f.default_factory is not MISSING else f.default
            setattr(self, f.name, values.pop(f.name, default))
        self._unknown = sorted(values)

    @classmethod
    def coerce(cls, value: Any) -> RunContext:
        """A validated RunContext from a RunContext, a dict (the server's JSON) or None."""
        if value is None:
            ctx = cls()
        elif isinstance(value, cls):
            ctx = cls(services=value.services, **{f.name: getattr(value, f.name) for f in fields(cls)},
                      **{k: None for k in value._unknown})
        elif isinstance(value, dict):
            ctx = cls(**value)
        else:
            raise InputError(f"the run context must be an object with {sorted(f.name for f in fields(cls))}, not {type(value).__name__}")
        ctx.validate()
        return ctx

    def validate(self) -> None:
        if self._unknown:
            known = sorted(f.name for f in fields(self))
            raise InputError(f"unknown run context keys {self._unknown}: use {known}")
        if self.project is not None and not isinstance(self.project, str):
            raise InputError(f"project must be a project name, not {type(self.project).__name__}")
        if not isinstance(self.skip, (list, tuple)) or not all(isinstance(s, str) for s in self.skip):
            raise InputError("skip must be a list of stage names")
        self.skip = validate_skip(list(self.skip))
        if self.history_profile not in (None, *HISTORY_PROFILES):
            raise InputError(f"history_profile must be one of {list(HISTORY_PROFILES)}, not {self.history_profile!r}")
        if self.strategy is not None and self.strategy not in Strategy.__members__:
            raise InputError(f"unknown retrieval strategy {self.strategy!r}: use one of {list(Strategy.__members__)}")
        if self.include_undecided not in (None, True, False):
            raise InputError("include_undecided must be true, false or null")
        if not all(isinstance(flag, bool) for flag in (self.manual, self.send, self.strict)):
            raise InputError("manual, send and strict must be true or false")
        if not isinstance(self.pause_after, (str, list, tuple)):
            raise InputError(f"pause_after must be one of {list(PAUSE_POLICIES)} or a list of stages")
        pause_points(self.pause_after)

    @property
    def pauses(self) -> list[str]:
        """The stages an auto run stops after for review (none in a manual step: it stops anyway)."""
        return [] if self.manual else pause_points(self.pause_after)


@dataclass(frozen=True)
class StageEnv:
    """What a stage function gets besides the SuperPrompt: the services, the run's options and input.

    `prompt` is the text a run was started with (the graph's input); None when a stage re-runs.
    """

    services: Services
    context: RunContext
    prompt: str | None = None


@dataclass(frozen=True)
class StageOutput:
    """What a stage function returns: the SuperPrompt fields it computed, its report, its selection view.

    The stage never advances the stage or renders the prompt: the graph applies the output in one place.
    """

    updates: dict[str, Any] = field(default_factory=dict)
    report: Report | None = None
    selection: list[str] | None = None
