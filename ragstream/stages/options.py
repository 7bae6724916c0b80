"""The run's options: what a run was asked to do, the same whichever door started it.

`RunOptions` is the graph's `context_schema`: the controller builds one, and LangGraph builds one from
the JSON a server client sent (`context=...`). Its validation is the product's, so a bad value or an
unknown key is an `InputError` naming the key and the allowed ones, whichever door it came through,
before any stage does work. The field descriptions are what Studio shows beside the context form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from ragstream.errors import InputError, RagstreamError
from ragstream.stages.rules import pause_points, validate_skip
from ragstream.strategies import Strategy, StrategyName, strategy_name

if TYPE_CHECKING:
    from ragstream.services import Services

HistoryProfile = Literal["none", "recent", "relevant"]


class RunOptions(BaseModel):
    """Per-run options; never part of the checkpointed state.

    `manual` marks a single stage run by hand (the controller's `step`), which may start without a
    project; an auto run needs its project before the first stage runs. The services travel beside the
    options (`services=`), never in the JSON a client sends or in the schema Studio shows.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    project: str | None = Field(
        None, description="The project whose documents ground the prompt (`ragstream projects`)."
    )
    strategy: StrategyName | None = Field(
        None,
        description=(
            "Force a retrieval strategy: KEYWORD (BM25), DENSE (vectors), HYBRID, TEMPORAL or EXPLORATORY "
            "(the earlier SEMANTIC and PRECISE still read as KEYWORD and DENSE); unset, it is chosen from the prompt."
        ),
    )
    skip: list[str] = Field(
        default_factory=list, description="Stages this run skips (only the ReRanker or A3, not both)."
    )
    include_undecided: bool | None = Field(
        None, description="Also retrieve with sections whose header the schema could not place."
    )
    history_profile: HistoryProfile | None = Field(
        None,
        description="Conversation memory: `none`, `recent` turns (default), or also `relevant` past turns as excerpts.",
    )
    projects: list[str] = Field(
        default_factory=list,
        description="More projects retrieved together with `project` (e.g. docs + code), fused into one list.",
    )
    web_search: bool | None = Field(
        None, description="Also ask the configured web-search server (`tools.web_search`); unset: as configured."
    )
    manual: bool = Field(False, description="A single stage run by hand (may start without a project).")
    send: bool = Field(False, description="After the build, answer the prompt with the configured LLM and its critic.")
    pause_after: Literal["a4", "none", "all"] | list[str] = Field(
        "a4",
        description=(
            "Where an auto run stops at the review interrupt: `a4` (after the Condenser), `none`, `all`, "
            "or stage names."
        ),
    )
    strict: bool = Field(
        False, description="Headers PreProcessing cannot map interrupt the run until a person decides them."
    )
    _services: Services | None = PrivateAttr(None)
    _admitted: bool = PrivateAttr(False)

    def __init__(self, services: Services | None = None, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise _input_error(exc, values) from None
        self._services = services

    @property
    def services(self) -> Services | None:
        return self._services

    @property
    def prompt_admitted(self) -> bool:
        """The run's prompt was validated and its secrets redacted before the run started (by a RunSession, through
        the graph's preflight), so PreProcessing does not check it again. Never set from a client's JSON."""
        return self._admitted

    def admitted(self) -> RunOptions:
        """These options for a run whose prompt is admitted (see `prompt_admitted`)."""
        copy = self.model_copy()
        copy._admitted = True
        return copy

    @field_validator("strategy", mode="before")
    @classmethod
    def _known_strategy(cls, value: Any) -> Any:
        name = strategy_name(value) if isinstance(value, str) else value
        if name is not None and name not in Strategy.__members__:
            raise InputError(f"unknown retrieval strategy {value!r}: use one of {list(Strategy.__members__)}")
        return name

    @field_validator("pause_after", mode="after")
    @classmethod
    def _pause_points(cls, value: str | list[str]) -> str | list[str]:
        pause_points(value)
        return value

    @property
    def pauses(self) -> list[str]:
        """The stages an auto run stops after for review (none in a manual step, which ends anyway)."""
        return [] if self.manual else pause_points(self.pause_after)

    @field_validator("skip", mode="after")
    @classmethod
    def _skippable(cls, value: list[str]) -> list[str]:
        return validate_skip(value)

    @classmethod
    def coerce(cls, value: Any) -> RunOptions:
        """Validated options from RunOptions, a mapping of its fields (a client's JSON, a caller's dict) or None."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping) and all(isinstance(key, str) for key in value):
            return cls(**value)
        raise InputError(
            f"the run context must be an object with keys {sorted(cls.model_fields)}, not {type(value).__name__}"
        )


def _input_error(exc: ValidationError, values: dict[str, Any]) -> InputError:
    """The first problem, as the product's own error: an unknown key names the allowed ones."""
    error = exc.errors()[0]
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, RagstreamError):
        return cause if isinstance(cause, InputError) else InputError(str(cause))
    key = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        unknown = sorted(set(values) - set(RunOptions.model_fields))
        return InputError(f"unknown run context keys {unknown}: use {sorted(RunOptions.model_fields)}")
    return InputError(f"run context {key}: {error['msg']} (got {error.get('input')!r})")
