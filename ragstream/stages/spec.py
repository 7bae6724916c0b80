"""What a stage declares about itself: its names, its gating rule, what it reads and writes.

Each stage module holds one `StageSpec` (its `SPEC`); the registry (`ragstream.stages.REGISTRY`) is the
tuple of those, in stage order. What a stage reads and writes is said in coarse facets: enough to derive
what a re-run or an edit invalidates (`ragstream.stages.rules`).
"""

from __future__ import annotations

from dataclasses import dataclass

PROMPT, LABELS, FORMAT = "prompt", "labels", "format"
CANDIDATES, SELECTION, CONDENSED, FORMAT_SPEC, FINAL = "candidates", "selection", "condensed", "format_spec", "final"


@dataclass(frozen=True)
class StageSpec:
    name: str  # the one short name: the graph node, the extras field, the CLI choice, the module
    label: str  # the GUI button
    after: str | None  # the frontier this stage needs at least (None: may always run)
    why: str  # the gating rule, as the user reads it when a call is refused
    skippable: bool
    reads: frozenset[str]
    writes: frozenset[str]
    fields: tuple[str, ...] = ()  # SuperPrompt fields holding its output, reset when it is invalid
    method: str = ""  # the RunSession method that runs it by hand (names from the controller spec)


def stage_spec(
    name: str,
    label: str,
    after: str | None,
    why: str,
    reads: set[str],
    writes: set[str],
    skippable: bool = False,
    fields: tuple[str, ...] = (),
    method: str = "",
) -> StageSpec:
    """A spec with its facets frozen and the controller method named `run_<name>` unless given."""
    return StageSpec(
        name, label, after, why, skippable, frozenset(reads), frozenset(writes), fields, method or f"run_{name}"
    )
