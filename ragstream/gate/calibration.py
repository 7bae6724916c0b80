"""The evidence a chunk needs on this corpus: calibrated on what off-topic questions reach here."""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragstream.gate.evidence import rarity_of, stemmed_terms, weigh_all
from ragstream.index.snapshot import Snapshot
from ragstream.settings import GateSettings


def null_evidence(
    snapshot: Snapshot,
    embed: Callable[[list[str]], np.ndarray],
    questions: list[str],
    settings: GateSettings,
) -> list[float]:
    """Each off-topic question's best evidence on this corpus: its dense and BM25 hits (`gate.null_hits`
    each) judged as candidates, exactly as `weigh_all` judges a prompt's. What a question the corpus does not
    treat still finds here: a corpus of how-to pages answers any "how do I" a little, code answers any
    question that names a common identifier."""
    if not questions or not snapshot.chunks or snapshot.vectors is None:
        return []
    asked = embed(questions)
    if snapshot.dense_fault(asked.shape[1]):  # a damaged index calibrates nothing: the absolute floor stands
        return []
    terms = set().union(*(stemmed_terms(q, settings) for q in questions))
    rarity = rarity_of(snapshot.document_frequency(terms), len(snapshot.chunks))
    best: list[float] = []
    for question, vector in zip(questions, asked, strict=True):
        hits = [cid for cid, _ in snapshot.vector_search(vector, settings.null_hits)]
        hits += [cid for cid, _ in snapshot.bm25_search(question, settings.null_hits)]
        candidates = [snapshot.chunk(cid) for cid in dict.fromkeys(hits)]
        stored = snapshot.vectors_of([c.id for c in candidates])
        vectors = np.asarray([stored[c.id] for c in candidates], dtype=np.float32).reshape(len(candidates), -1)
        found = weigh_all([question], candidates, vectors, np.asarray([vector]), settings, rarity)
        best.append(max(found.evidence.values(), default=0.0))
    return best


@dataclass(frozen=True)
class Calibration:
    """The evidence a chunk needs on this corpus: above what questions it does not treat reach here (the null's
    median plus `gate.null_z` robust spreads), never under the absolute `gate.min_evidence`."""

    min_evidence: float
    median: float = 0.0
    spread: float = 0.0
    questions: int = 0

    def describe(self) -> str:
        if not self.questions:
            return f"absolute: min evidence {self.min_evidence:.2f} (no off-topic calibration)"
        return (
            f"off-topic questions ({self.questions}) reach evidence {self.median:.2f} (median, spread "
            f"{self.spread:.2f}) on this corpus: min evidence {self.min_evidence:.2f}"
        )


def calibrated(null: list[float], settings: GateSettings) -> Calibration:
    """The corpus's threshold from its null evidence (median and 1.4826 x median absolute deviation: a few
    off-topic questions that happen to be on topic here do not move it)."""
    if not null:
        return Calibration(settings.min_evidence)
    median = statistics.median(null)
    spread = max(1.4826 * statistics.median(abs(x - median) for x in null), settings.null_min_spread)
    return Calibration(max(settings.min_evidence, median + settings.null_z * spread), median, spread, len(null))


_NULLS: dict[tuple[str, int, str], list[float]] = {}
_NULLS_LOCK = threading.Lock()
NULL_FILE = "a3_null.json"


def corpus_null(
    snapshot: Snapshot,
    folder: Path | None,
    embed: Callable[[list[str]], np.ndarray],
    questions: list[str],
    settings: GateSettings,
) -> list[float]:
    """`null_evidence` for this index generation, computed once: cached in memory and, when the generation's
    folder is given, in a file beside the index (keyed by the questions and the gate's evidence settings, so a
    change to either recomputes it; a new ingest is a new generation)."""
    recipe = json.dumps(
        [questions, settings.words_weight, settings.min_similarity, settings.null_hits, settings.function_words]
    )
    key = (str(folder), snapshot.generation, hashlib.sha256(recipe.encode()).hexdigest())
    with _NULLS_LOCK:
        if key in _NULLS:
            return _NULLS[key]
    path = folder / NULL_FILE if folder is not None and folder.is_dir() else None
    null: list[float] | None = None
    if path is not None and path.is_file():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            null = [float(x) for x in stored["null"]] if stored.get("key") == key[2] else None
        except (OSError, ValueError, KeyError, TypeError):
            null = None
    if null is None:
        null = null_evidence(snapshot, embed, questions, settings)
        if path is not None:
            try:
                temp = path.with_suffix(f".{os.getpid()}.tmp")
                temp.write_text(json.dumps({"key": key[2], "null": null}), encoding="utf-8")
                temp.replace(path)
            except OSError:
                pass  # a read-only index is calibrated in memory only
    with _NULLS_LOCK:
        _NULLS[key] = null
    return null


def off_topic_questions(config_dir: Path, settings: GateSettings) -> list[str]:
    """The configured off-topic questions (`gate.off_topic_questions`, a file in config/)."""
    found = json.loads((config_dir / settings.off_topic_questions).read_text(encoding="utf-8"))
    return [str(q) for q in found["questions"]]
