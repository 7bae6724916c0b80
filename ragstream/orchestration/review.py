"""Human review the LangGraph way: the `review` node stops an auto run with `interrupt(payload)` and
the run goes on with `Command(resume=answer)`.

The answer is checked by the interrupt's `response_schema`, whose validator runs the product's one edit
path (`apply_edit`) on the state under review: a bad answer (an unknown chunk id, a wrong type, a field
that is not editable) fails with an `InputError` before anything is saved, so the interrupt stays pending
and can be answered again. LangGraph reads a resume dict whose keys are all interrupt ids (`{}`
included) as a map of answers, so accepting as is takes `{"accept": true}`.

Each stage a run may pause after has its own review node (`review` after A4, the default pause;
`review_<stage>` after the others), whose edges go only where a run can go from that review: the
next stage from the frontier the review leaves (see `review_targets`), so the drawn graph has no path
a run cannot take.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from typing import Any, TypeVar

from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from ragstream.code.symbols import lines_of
from ragstream.errors import InputError
from ragstream.orchestration.apply import CONDENSED_FIELD, EDITABLE, LABEL_FIELDS, apply_edit, to_channels
from ragstream.stages import SKIPPABLE, Stage
from ragstream.stages.rules import frontier_after, next_stage, rank, spec_of, validate_skip
from ragstream.state import SuperPrompt
from ragstream.state.stage import ORDER
from ragstream.text.previews import preview

REVIEW = "review"
PREVIEW_CHARS = 240
Answer = TypeVar("Answer", bound=BaseModel)
NO_ANSWER = 'answer {"accept": true} to go on as is, or the fields to change, among ' + str(sorted(EDITABLE))


class ReviewAnswer(BaseModel):
    """What a reviewer sends back: `accept`, or any of the editable fields (the rest stays as it is)."""

    # Other keys are kept for `apply_edit` to refuse by name ("cannot be edited; editable: ...").
    model_config = ConfigDict(extra="allow", strict=True, validate_by_name=True, validate_by_alias=True)

    accept: bool | None = None
    s_ctx_md: str | None = Field(None, alias=CONDENSED_FIELD)
    final_selection_ids: list[str] | None = None
    system: str | None = None
    audience: str | None = None
    tone: str | None = None
    depth: str | None = None
    confidence: str | None = None
    format: str | None = None

    def edits(self) -> dict[str, Any]:
        return {**self.model_dump(exclude_none=True, exclude={"accept"}), **(self.model_extra or {})}


def checked(base: type[Answer], check: Callable[[Answer], None]) -> type[Answer]:
    """`base` with `check` as its validator: the schema a resume value must pass before it is saved."""

    def validate(answer: Answer) -> Answer:
        try:
            check(answer)
        except InputError as exc:
            raise ValueError(str(exc)) from None
        return answer

    check_answer = model_validator(mode="after")(validate)
    # pydantic types __validators__ as plain functions; it takes (and needs) the decorated validator.
    return create_model(base.__name__, __base__=base, __validators__={"check": check_answer})  # type: ignore[dict-item]


def ask(payload: dict[str, Any], schema: type[Answer]) -> Answer:
    """The person's answer to `payload`; a refused answer is an InputError and leaves the interrupt pending."""
    try:
        return interrupt(payload, response_schema=schema)
    except ValidationError as exc:
        problems = "; ".join(
            (".".join(str(p) for p in err["loc"]) + ": " if err["loc"] else "")
            + err["msg"].removeprefix("Value error, ")
            for err in exc.errors()
        )
        raise InputError(f"the answer was refused and the question still waits for one: {problems}") from None


def review_payload(sp: SuperPrompt) -> dict[str, Any]:
    """What a reviewer needs to judge the run so far."""
    chunks = sp.chunk_by_id()
    selected = []
    for cid in sp.final_selection_ids:
        chunk = chunks.get(cid)
        if chunk is None:
            continue
        lines = lines_of(chunk)
        selected.append(
            {
                "id": cid,
                "source": chunk.source_path,
                "lines": f"{lines[0]}-{lines[1]}" if lines else None,
                "preview": preview(chunk.text, PREVIEW_CHARS),
            }
        )
    return {
        "kind": "review",
        "after": sp.history_of_stages[-1].value if sp.history_of_stages else None,
        "stage": sp.stage.value,
        CONDENSED_FIELD: sp.s_ctx_md,
        "chunks": selected,
        "labels": {name: getattr(sp.body, name) for name in LABEL_FIELDS},
        "format": sp.body.format,
        "editable": sorted(EDITABLE),
        "resume": 'Command(resume={"accept": true}) to go on as is, or {<editable field>: <new value>, ...}',
    }


def review_name(stage: Stage) -> str:
    """The review node after `stage`: `review` after A4 (the default pause), `review_<stage>` elsewhere."""
    return REVIEW if stage is Stage.A4 else f"{REVIEW}_{stage.node}"


def legal_skips() -> list[frozenset[str]]:
    """Every skip set a run may have."""
    names = sorted(SKIPPABLE)
    found = []
    for size in range(len(names) + 1):
        for skip in combinations(names, size):
            try:
                validate_skip(list(skip))
            except InputError:
                continue
            found.append(frozenset(skip))
    return found


def review_targets(stage: Stage) -> set[Stage | None]:
    """Where a run may go from the review after `stage` (None: the end of the stages).

    Accepted as is, to the next stage the run does not skip. An accepted edit re-records the output of
    the stage that last wrote the field (see `apply_edit`) and re-opens what reads it, so the run goes on
    from that frontier: editing the selection at the build's review re-runs A4, a label re-runs A5.
    """
    targets: set[Stage | None] = set()
    for skip in legal_skips():
        if stage.node in skip:  # it ran: this run does not skip it
            continue
        frontiers = {stage}
        for facet in set(EDITABLE.values()):
            writers = [s for s in ORDER[1 : rank(stage) + 1] if s.node not in skip and facet in spec_of(s).writes]
            if writers:  # no writer yet: the edit is refused, the review stays
                frontiers.add(frontier_after(stage, writers[-1], frozenset({facet})))
        targets.update(next_stage(frontier, skip) for frontier in frontiers)
    return targets


def check_review(sp: SuperPrompt) -> Callable[[ReviewAnswer], None]:
    def check(answer: ReviewAnswer) -> None:
        edits = answer.edits()
        if not edits and answer.accept is not True:
            raise InputError(NO_ANSWER)
        if edits:
            apply_edit(sp, edits)

    return check


def review_node(state: SuperPrompt) -> dict[str, Any]:
    """Stop for the person; their edits become A4's output (or the owning stage's) through `apply_edit`."""
    answer = ask(review_payload(state), checked(ReviewAnswer, check_review(state)))
    edits = answer.edits()
    if not edits:
        return {}
    updates, _ = apply_edit(state, edits)
    return to_channels(state, updates)
