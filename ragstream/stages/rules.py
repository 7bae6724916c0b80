"""The stage rules: what may run now, what a re-run or an edit invalidates, where an auto run goes next.

`SuperPrompt.stage` is the *frontier*: the furthest stage whose output is still valid. Re-running a
stage invalidates every later stage that reads what it writes (and everything after that), so
re-running A2 keeps retrieval through A4 and only invalidates A5 and the build. Edits made by a
person invalidate the same way. Everything here derives from the registry (`ragstream.stages.REGISTRY`,
each stage's `SPEC`); the functions are pure and import no model, index or graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragstream.errors import InputError, StageOrderError
from ragstream.stages import SKIPPABLE, SPECS
from ragstream.stages.spec import StageSpec
from ragstream.state.stage import NAMES as NAMES
from ragstream.state.stage import ORDER as ORDER
from ragstream.state.stage import Stage
from ragstream.state.stage import rank as rank

if TYPE_CHECKING:
    from ragstream.state.superprompt import SuperPrompt


def stage_named(name: str) -> Stage:
    """The stage for a user-given name (old names accepted); a clear InputError otherwise."""
    try:
        stage = Stage(name)
    except ValueError:
        stage = None
    if stage is None or stage is Stage.RAW:
        raise InputError(f"unknown stage {name!r}: use one of {list(NAMES)}")
    return stage


def spec_of(stage: Stage | str) -> StageSpec:
    return SPECS[Stage(stage).node]


def previous(stage: Stage) -> Stage:
    return ORDER[max(rank(stage) - 1, 0)]


def first_invalidated(written: frozenset[str], after: Stage) -> Stage | None:
    """The first stage after `after` that reads any of the facets `written`.

    Validity is a prefix of the stage order, so everything from the returned stage on is invalid.
    """
    for stage in ORDER[rank(after) + 1 :]:
        if spec_of(stage).reads & written:
            return stage
    return None


def frontier_after(current: Stage, ran: Stage, written: frozenset[str] | None = None) -> Stage:
    """The frontier once `ran` produced new output (or a person edited `written` facets at `ran`).

    Stages after `ran` stay valid until the first one that reads what changed.
    """
    spec_written = spec_of(ran).writes if written is None else written
    stop = first_invalidated(spec_written, ran)
    keep_until = current if stop is None else min(current, previous(stop), key=rank)
    return max(ran, keep_until, key=rank)


def stage_blocker(sp: SuperPrompt, target: Stage) -> str | None:
    """Why `target` may not run on `sp` now, or None when it may."""
    if target is Stage.RAW:
        return "'raw' is the starting state, not a stage to run"
    spec = spec_of(target)
    if spec.after is None:
        return None
    if rank(sp.stage) < rank(spec.after):
        return spec.why
    if target is Stage.A4 and rank(sp.stage) < rank(Stage.A3) and not sp.final_selection_ids:
        return spec.why
    return None


def check_stage_allowed(sp: SuperPrompt, target: Stage) -> None:
    """Raise StageOrderError when `target` may not run on `sp`."""
    blocker = stage_blocker(sp, target)
    if blocker is not None:
        raise StageOrderError(target.node, sp.stage.value, blocker)


def allowed_stages(sp: SuperPrompt) -> list[Stage]:
    """Stages that may run next, in pipeline order (for enabling buttons)."""
    return [s for s in ORDER[1:] if stage_blocker(sp, s) is None]


def next_stage(frontier: Stage, skip: frozenset[str] | set[str] = frozenset()) -> Stage | None:
    """Where an auto run goes after `frontier`: the next stage not skipped, None when done."""
    for stage in ORDER[rank(frontier) + 1 :]:
        if stage.node not in skip:
            return stage
    return None


def successors(stage: Stage) -> list[Stage]:
    """The stages an auto run may go to right after `stage`: its successor, and the later stages reachable
    by skipping skippable stages in a legal skip set (the edges the graph draws)."""
    found = []
    for target in ORDER[rank(stage) + 1 :]:
        between = [s.node for s in ORDER[rank(stage) + 1 : rank(target)]]
        if not set(between) <= SKIPPABLE:
            break
        try:
            validate_skip(between)
        except InputError:
            continue
        found.append(target)
    return found


def _node_name(name: str) -> str:
    """The short name of a stage given by any of its names (unchanged when it names no stage)."""
    try:
        return Stage(name).node
    except ValueError:
        return name


def validate_skip(skip: list[str] | tuple[str, ...]) -> list[str]:
    """Skip options: only skippable stages, and never both stages A4 can follow."""
    names = [_node_name(s) for s in skip]
    unknown = sorted(set(names) - SKIPPABLE)
    if unknown:
        raise InputError(f"cannot skip {unknown}: only {sorted(SKIPPABLE)} may be skipped")
    if {"rerank", "a3"} <= set(names):
        raise InputError("cannot skip both the ReRanker and A3: the Condenser needs one of them")
    return names


PAUSE_POLICIES = ("a4", "none", "all")


def pause_points(policy: str | list[str] | tuple[str, ...]) -> list[str]:
    """`a4` (default): pause after the Condenser; `all`: after every stage; `none`; or stage names."""
    if isinstance(policy, (list, tuple)):
        return [stage_named(name).node for name in policy]
    if policy not in PAUSE_POLICIES:
        raise InputError(f"pause_after must be one of {PAUSE_POLICIES} or a list of stages, not {policy!r}")
    return {"a4": ["a4"], "none": [], "all": list(NAMES)}[policy]
