"""Candidates kept after the chunks kept on their own: beside a kept chunk (an answer runs on across a chunk's edge),
or, offline, in the unsure band of an ask the documents treat."""

from __future__ import annotations

from dataclasses import replace

from ragstream.gate.evidence import Weighed, decision_counts
from ragstream.settings import GateSettings
from ragstream.state import Chunk, ChunkDecision


def keep_adjacent(weighed: Weighed, candidates: list[Chunk], settings: GateSettings) -> Weighed:
    """A candidate dropped under the floor but at `gate.weak_evidence` or over is kept when the chunk before or
    after it in its file is kept on its own: tenacity's `before_sleep_log` signature was dropped at 0.53 while the
    chunk holding the rest of the function was kept, so the excerpts showed a body without its name and parameters.
    It comes after the chunks kept on their own evidence, which A4 and the builder read first: placed beside its
    neighbour, a release-notes page's weak chunks took uvicorn's settings page out of A4's window."""
    decisions = weighed.report.decisions
    place = {(c.source_path, c.chunk_index): c.id for c in candidates if c.id in weighed.kept}
    order = list(weighed.kept)
    for c in candidates:
        if decisions[c.id].decision != "drop_irrelevant" or weighed.evidence.get(c.id, -1.0) < settings.weak_evidence:
            continue
        before, after = place.get((c.source_path, c.chunk_index - 1)), place.get((c.source_path, c.chunk_index + 1))
        if before is None and after is None:
            continue
        order.append(c.id)
        index = c.chunk_index - 1 if before is not None else c.chunk_index + 1
        decisions[c.id] = ChunkDecision(
            decision="keep", reason=f"{decisions[c.id].reason}; beside chunk {index} of its file, which is kept"
        )
    if len(order) == len(weighed.kept):
        return weighed
    weighed.report.counts = decision_counts(decisions)
    return replace(weighed, kept=order)


def keep_unsure(weighed: Weighed, candidates: list[Chunk], settings: GateSettings, treated: bool) -> Weighed:
    """When the documents treat the ask (`treated`: it names nothing they lack, and some chunk is kept on its own
    evidence), a candidate dropped only for evidence under the floor (`Weighed.short`) but at `gate.weak_evidence` or
    over is kept after all the others: offline nobody decides that band, where with a model the model does. Dropped,
    a typo-laden ask kept one chunk ("hw do i exit my typer app with a non zero exit code when validaton fails??":
    the page saying "`typer.Exit()` takes an optional `code` parameter" reached 0.48, its words spread thin over
    "hw", "zero" and "fails"), and the prompt showed one excerpt where ten fit. Last in the order, such chunks fill
    only the room the sure ones leave. An ask naming what no document mentions ("hand it off to Celery workers")
    keeps none: there the band holds the near misses of the missing topic."""
    if not treated or not weighed.kept:
        return weighed
    decisions = weighed.report.decisions
    unsure = [
        c.id
        for c in candidates
        if c.id in weighed.short
        and decisions[c.id].decision != "keep"
        and weighed.evidence.get(c.id, -1.0) >= settings.weak_evidence
    ]
    if not unsure:
        return weighed
    for cid in unsure:
        decisions[cid] = ChunkDecision(
            decision="keep",
            reason=f"{decisions[cid].reason}; in the unsure band (at least {settings.weak_evidence:g}) of an ask "
            "the documents treat, kept after the others",
        )
    weighed.report.counts = decision_counts(decisions)
    weighed.report.unsure = unsure
    return replace(weighed, kept=[*weighed.kept, *unsure])
