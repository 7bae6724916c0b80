"""ProjectSearcher: one project's index, searched with query pieces + a strategy -> one merged,
deduplicated, fused result set.

Every query piece is searched by every retriever the strategy needs; the ranked lists are fused with
weighted reciprocal-rank fusion. A failing retriever is logged and skipped; all failing raises
RetrievalError. Hybrid-based strategies walk a fallback ladder over the dense hits: the configured
similarity floor, then a lower one, then no floor when too few dense hits clear it; lexical (BM25)
hits are never removed by a floor.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from ragstream.embedding.embedder import Embedder
from ragstream.errors import IndexVectorsError, RetrievalError
from ragstream.index.catalog import Catalog, FileCatalog, committed_snapshot
from ragstream.index.snapshot import Snapshot
from ragstream.retrieval.confidence import Confidence, Probes, assess, content_terms
from ragstream.retrieval.fusion import RankedList, RetrievedChunk, rrf_fuse
from ragstream.retrieval.strategy import choose_strategy, years_in
from ragstream.settings import RetrievalSettings
from ragstream.strategies import Strategy
from ragstream.tenancy.projects import ProjectPaths
from ragstream.text.dates import timestamp
from ragstream.text.headings import names_held

log = logging.getLogger("ragstream.retrieval")


@dataclass(frozen=True)
class Query:
    """One query piece: its text and weight (from PreProcessing Task 4)."""

    text: str
    weight: float = 1.0


@dataclass(frozen=True)
class Attempt:
    """One strategy tried for a query, the confidence of its result set and what re-runs compare it by."""

    strategy: str
    confidence: float
    compared: float


@dataclass
class MergedResultSet:
    results: list[RetrievedChunk]
    strategy: Strategy
    rung: str
    strategy_reason: str = ""
    similarity: dict[str, float] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    generation: int = 0
    confidence: Confidence = field(default_factory=lambda: Confidence(0.0, {}))
    attempts: list[Attempt] = field(default_factory=list)  # every strategy tried, in order, with its confidence

    @property
    def ids(self) -> list[str]:
        return [r.chunk_id for r in self.results]


class ProjectSearcher:
    def __init__(
        self, paths: ProjectPaths, settings: RetrievalSettings, embedder: Embedder, catalog: Catalog | None = None
    ) -> None:
        self.paths = paths
        self.settings = settings
        self.embedder = embedder
        self.catalog = catalog or FileCatalog()

    def snapshot(self) -> Snapshot:
        """The committed index generation, asked of the catalog on every search (a stat of the manifest file,
        or one PostgreSQL row), so a re-ingest is seen by the next query."""
        snap = committed_snapshot(self.catalog, self.paths)
        if snap is None:
            raise RetrievalError(
                f"project '{self.paths.name}' has no index yet: run `ragstream ingest {self.paths.name}`"
            )
        return snap

    # -- sub-retrievers: each returns one ranked list per query piece -------------------------

    def _vector(self, queries: list[Query], probes: Probes) -> list[RankedList]:
        return [
            RankedList("vector", hits, self.settings.weights["vector"] * q.weight)
            for q, hits in zip(queries, probes.dense, strict=False)
        ]

    def _bm25(self, queries: list[Query], probes: Probes) -> list[RankedList]:
        return [
            RankedList("bm25", hits, self.settings.weights["bm25"] * q.weight)
            for q, hits in zip(queries, probes.bm25, strict=False)
        ]

    def _temporal(self, queries: list[Query], base: list[RetrievedChunk], snap: Snapshot) -> list[RankedList]:
        """Hybrid candidates ordered by fused score times recency decay; years named in the query filter."""
        years = set().union(*(years_in(q.text) for q in queries))
        now = datetime.now(UTC).timestamp()
        half_life = self.settings.temporal_half_life_days * 86400.0
        scored = []
        for item in base:
            when = _timestamp(snap.chunk(item.chunk_id).metadata)
            if years and (when is None or datetime.fromtimestamp(when, UTC).year not in years):
                continue
            decay = 0.5 ** (max(now - when, 0.0) / half_life) if when is not None else 0.0
            scored.append((item.chunk_id, item.score * decay))
        scored.sort(key=lambda h: (-h[1], h[0]))
        return [RankedList("temporal", scored, self.settings.weights["temporal"])]

    def _graph(self, base: list[RetrievedChunk], snap: Snapshot) -> list[RankedList]:
        """Neighbouring chunks of the seeds' files, then the first chunks of files linked to or from them.

        Chunks that other retrievers found too are boosted, not skipped: being linked is evidence.
        """
        seeds = [snap.chunk(r.chunk_id) for r in base[: self.settings.expansion_seeds]]
        seen = {s.id for s in seeds}
        hits: list[tuple[str, float]] = []
        reverse: dict[str, list[str]] = {}
        for src, targets in snap.links.items():
            for t in targets:
                reverse.setdefault(t, []).append(src)
        for rank, seed in enumerate(seeds, start=1):
            siblings = snap.by_file.get(seed.source_path, [])
            pos = siblings.index(seed.id)
            reach = self.settings.expansion_neighbors
            neighbours = siblings[max(pos - reach, 0) : pos] + siblings[pos + 1 : pos + 1 + reach]
            linked = [
                snap.by_file[path][0]
                for path in snap.links.get(seed.source_path, []) + reverse.get(seed.source_path, [])
                if snap.by_file.get(path)
            ]
            for cid in neighbours + linked:
                if cid not in seen:
                    seen.add(cid)
                    hits.append((cid, 1.0 / rank))
        return [RankedList("graph", hits, self.settings.weights["graph"])]

    def _sections(self, queries: list[Query], base: list[RetrievedChunk], snap: Snapshot) -> list[RankedList]:
        """The sections that define a name the query names ("no-cache", "`dev_addr`"), by their heading: a question
        naming two directives finds pages that repeat both names above the reference entries that say what each
        does. A name most chunks hold (`sections_max_share`) picks out nothing. The fused order ranks them among
        themselves."""
        sections = snap.sections
        named = names_held(" ".join(q.text for q in queries), {key: name for key, (name, _) in sections.items()})
        if not named:
            return []
        most = self.settings.sections_max_share
        ids = {cid for key in named if snap.share_holding(key) <= most for cid in sections[key][1]}
        if not ids:
            return []
        rank = {r.chunk_id: i for i, r in enumerate(base)}
        ordered = sorted(ids, key=lambda cid: (rank.get(cid, len(rank)), snap.by_id[cid]))
        return [RankedList("sections", [(cid, 1.0) for cid in ordered], self.settings.weights["sections"])]

    # -- orchestration ----------------------------------------------------------------------

    def _run(self, name: str, fn: Callable[[], list[RankedList]], report: MergedResultSet) -> list[RankedList]:
        started = time.perf_counter()
        try:
            lists = fn()
        except Exception as exc:  # one retriever failing must not sink the others
            report.failures[name] = f"{type(exc).__name__}: {exc}"
            log.warning("retriever %s failed: %s", name, report.failures[name])
            return []
        finally:
            report.timings_ms[name] = (time.perf_counter() - started) * 1000
        report.counts[name] = sum(len(r.hits) for r in lists)
        log.info("retriever %s: %d hits in %.1f ms", name, report.counts[name], report.timings_ms[name])
        return lists

    def retrieve(
        self,
        queries: list[Query] | list[str],
        strategy: Strategy | None = None,
        rerun: bool | None = None,
        limit: int | None = None,
    ) -> MergedResultSet:
        """The fused result set (at most `limit` candidates, `max_candidates` when not given), with its
        confidence. When the strategy was chosen here (not by the caller) and the confidence is low, each
        strategy of `confidence.rerun_strategies` is tried too and the result with the best `compared`
        confidence is kept (retrieval/confidence.py); every attempt is recorded in `attempts`. `rerun`
        overrides when that loop may run."""
        pieces = [q if isinstance(q, Query) else Query(q) for q in queries]
        pieces = [q for q in pieces if q.text.strip()]
        if not pieces:
            raise RetrievalError("no query text to retrieve with")
        chosen_here = strategy is None
        strategy, reason = (
            (strategy, "chosen by the caller") if strategy else choose_strategy(" ".join(q.text for q in pieces))
        )
        snap = self.snapshot()
        probing = MergedResultSet(results=[], strategy=strategy, rung="direct")
        probes = self._probes(pieces, snap, probing)
        report = self._retrieve_once(pieces, strategy, reason, snap, probes, probing, limit)
        cfg = self.settings.confidence
        if not (chosen_here if rerun is None else rerun) or not report.confidence.is_low(cfg):
            return report
        best = report
        for other in cfg.rerun_strategies:
            if other is strategy:
                continue
            try:
                candidate = self._retrieve_once(
                    pieces, other, f"re-run: {strategy.value} confidence was low", snap, probes, probing, limit
                )
            except RetrievalError:  # the other strategy's retrievers failed: keep what we have
                continue
            report.attempts.append(Attempt(other.value, candidate.confidence.score, candidate.confidence.compared))
            if candidate.confidence.compared > best.confidence.compared:
                best = candidate
        best.attempts = report.attempts
        return best

    def _probes(self, pieces: list[Query], snap: Snapshot, probing: MergedResultSet) -> Probes:
        """Both lists for every piece, once: the strategies fuse them and the confidence reads them.

        A failing retriever is recorded in `probing.failures`: the embedder failing, or the index's
        vectors not fitting the query's (`Snapshot.dense_fault`), fails the dense retriever only, and
        the confidence is then computed without dense evidence."""
        started = time.perf_counter()
        vectors: np.ndarray | None = None
        try:
            vectors = self.embedder.embed([q.text for q in pieces])
            if not np.isfinite(vectors).all():
                raise IndexVectorsError("the embedder gave NaN or infinite vectors for the query")
        except Exception as exc:  # BM25 still answers without the embedder
            probing.failures["vector"] = f"{type(exc).__name__}: {exc}"
            log.warning("embedding failed, retrieval without dense evidence: %s", probing.failures["vector"])
            vectors = None
        probing.timings_ms["embed"] = (time.perf_counter() - started) * 1000
        k = self.settings.top_k
        dense = (
            []
            if vectors is None
            else self._run("vector", lambda: [RankedList("vector", snap.vector_search(v, k)) for v in vectors], probing)
        )
        bm25 = self._run("bm25", lambda: [RankedList("bm25", snap.bm25_search(q.text, k)) for q in pieces], probing)
        return Probes(
            dense=[rl.hits for rl in dense],
            bm25=[rl.hits for rl in bm25],
            vectors=None if "vector" in probing.failures else vectors,
            terms=content_terms([q.text for q in pieces]),
        )

    def stored_vectors(self, chunk_ids: list[str]) -> dict[str, np.ndarray]:
        """The index's vectors of these chunks; none at all when they cannot be compared with this
        embedder's (`Snapshot.dense_fault`), so that the callers embed the chunks' texts instead."""
        snap = self.snapshot()
        return {} if snap.dense_fault(self.embedder.dimension) else snap.vectors_of(chunk_ids)

    def _retrieve_once(
        self,
        pieces: list[Query],
        strategy: Strategy,
        reason: str,
        snap: Snapshot,
        probes: Probes,
        probing: MergedResultSet,
        limit: int | None = None,
    ) -> MergedResultSet:
        """One strategy over the probes' lists (the probes' timings, counts and failures are its own)."""
        report = MergedResultSet(
            results=[], strategy=strategy, rung="direct", strategy_reason=reason, generation=snap.generation
        )
        report.timings_ms["embed"] = probing.timings_ms["embed"]
        lists: list[RankedList] = []
        for name, wanted, build in (
            ("vector", strategy is not Strategy.KEYWORD, lambda: self._vector(pieces, probes)),
            ("bm25", strategy is not Strategy.DENSE, lambda: self._bm25(pieces, probes)),
        ):
            if not wanted:
                continue
            if name in probing.failures:
                report.failures[name] = probing.failures[name]
                continue
            lists += build()
            report.timings_ms[name] = probing.timings_ms[name]
            report.counts[name] = probing.counts[name]
        expected = 1 if strategy in (Strategy.DENSE, Strategy.KEYWORD) else 2
        if len(report.failures) >= expected:
            raise RetrievalError(f"every retriever failed: {report.failures}")

        if strategy not in (Strategy.DENSE, Strategy.KEYWORD) and "vector" not in report.failures:
            lists, report.rung, report.similarity = self._ladder(lists)
        base = rrf_fuse(lists, self.settings.rrf_k)
        if strategy is Strategy.TEMPORAL:
            lists = lists + self._run("temporal", lambda: self._temporal(pieces, base, snap), report)
        elif strategy is Strategy.EXPLORATORY:
            lists = lists + self._run("graph", lambda: self._graph(base, snap), report)
        fused = rrf_fuse(lists, self.settings.rrf_k)[: limit or self.settings.max_candidates]
        # The confidence judges what the words and vectors found, before the sections a name picks out join them.
        report.confidence = assess([r.chunk_id for r in fused], probes, snap, self.settings.confidence)
        if strategy not in (Strategy.DENSE, Strategy.KEYWORD):
            lists = lists + self._run("sections", lambda: self._sections(pieces, base, snap), report)
            fused = rrf_fuse(lists, self.settings.rrf_k)[: limit or self.settings.max_candidates]
        report.results = fused
        report.attempts = [Attempt(strategy.value, report.confidence.score, report.confidence.compared)]
        return report

    def _ladder(self, lists: list[RankedList]) -> tuple[list[RankedList], str, dict[str, float]]:
        """The similarity floor, applied to the dense hits only: it never removes lexical evidence.

        Dense hits under `min_score` are dropped; when fewer than `min_results` clear it, the lower
        floor is tried, and when even that leaves too few, the dense hits stay unfiltered. BM25 hits
        are kept on every rung. Returns the lists, the rung, and each dense hit's best cosine.
        """
        similarity: dict[str, float] = {}
        for rl in lists:
            if rl.retriever == "vector":
                for cid, score in rl.hits:
                    similarity[cid] = max(similarity.get(cid, score), score)
        for rung, floor in (("hybrid", self.settings.min_score), ("hybrid_lower", self.settings.fallback_min_score)):
            passing = {cid for cid, score in similarity.items() if score >= floor}
            if len(passing) >= self.settings.min_results:
                filtered = [
                    RankedList(rl.retriever, [h for h in rl.hits if h[0] in passing], rl.weight)
                    if rl.retriever == "vector"
                    else rl
                    for rl in lists
                ]
                return filtered, rung, similarity
        return lists, "no_floor", similarity


def _timestamp(metadata: dict[str, str | int | float | bool | None]) -> float | None:
    """A chunk's date: an ISO date found in the document, else the file's mtime."""
    date = metadata.get("date")
    when = timestamp(date) if isinstance(date, str) else None
    if when is not None:
        return when
    mtime = metadata.get("mtime")
    return float(mtime) if isinstance(mtime, (int, float)) and math.isfinite(mtime) else None
