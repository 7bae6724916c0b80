"""Calibration of retrieval confidence (ragstream/retrieval/confidence.py) on labelled queries.

Four judged sets: SciFact (BEIR, judged documents; ingested by bench/retrieval_eval.py into the same
--work), the ragstream docs set and the httpx code questions under bench/corpora/, and the streamlit
docs set (bench/corpora/streamlit-docs.json: the Markdown references streamlit ships, questions
written before any tuning). For every query, the strategy the chooser picks and each re-run strategy
of the config are run without re-runs; each result gives the six confidence signals and a label: is a
relevant chunk among the first `confidence.top` results?

Printed: the logistic weights fitted on all sets (each set weighted equally), to paste into
`retrieval.confidence`; per set, the model fitted on the OTHER sets (held out): Brier score, AUC and a
reliability table (predicted vs observed hit rate per confidence band); and the re-run policy's effect
at the configured `low`: hit@top of the chosen strategy alone vs with re-runs, and how many re-ran.

Run after bench/retrieval_eval.py has ingested SciFact into the same work folder:
    python bench/confidence_calibration.py [--work data/bench] [--scifact-limit 300]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from code_suite import QUESTIONS as CODE_QUESTIONS
from code_suite import copy_package, lines, load_questions
from retrieval_eval import DEFAULT_DATA, doc_ranking, read_jsonl, read_qrels, write_corpus

from ragstream.ingestion.manager import IngestionManager
from ragstream.retrieval.confidence import SIGNALS, calibrated, comparable
from ragstream.retrieval.factory import build_searcher
from ragstream.retrieval.search import ProjectSearcher
from ragstream.settings import ConfidenceSettings, Settings, load_settings
from ragstream.strategies import Strategy

CORPORA = Path(__file__).resolve().parent / "corpora"
DOCS_SET = CORPORA / "streamlit-docs.json"


@dataclass
class Case:
    corpus: str
    query: str
    searcher: ProjectSearcher
    hit: Callable[[list[str]], bool]


@dataclass
class Row:
    corpus: str
    qid: int
    strategy: str
    first: bool
    signals: dict[str, float]
    label: bool


def beir_cases(settings: Settings, data: Path, split: str, name: str, limit: int, ingest: bool) -> list[Case]:
    if ingest:
        write_corpus(data, settings.data_dir / "doc_raw" / data.name)
        IngestionManager(settings).ingest(data.name)
    searcher = build_searcher(settings, data.name)
    qrels = read_qrels(data / "qrels" / f"{split}.tsv")
    queries = [q for q in read_jsonl(data / "queries.jsonl") if q["_id"] in qrels]
    if limit:
        queries = queries[:limit]
    return [
        Case(
            name,
            q["text"],
            searcher,
            lambda ids, rel=qrels[q["_id"]]: any(rel.get(d, 0) > 0 for d in doc_ranking(ids)),
        )
        for q in queries
    ]


def code_cases(settings: Settings) -> list[Case]:
    package = json.loads(CODE_QUESTIONS.read_text(encoding="utf-8"))["package"]
    raw = settings.data_dir / "doc_raw" / package
    root = copy_package(package, raw)
    questions = load_questions(CODE_QUESTIONS, root)
    IngestionManager(settings).ingest(package)
    searcher = build_searcher(settings, package)
    texts = {p.relative_to(raw).as_posix(): p.read_text(encoding="utf-8") for p in raw.rglob("*.py")}

    def hit(ids: list[str], q) -> bool:
        for cid in ids:
            chunk = searcher.snapshot().chunk(cid)
            if chunk.source_path == q.file:
                first, last = lines(chunk, texts)
                if first <= q.last and q.first <= last:
                    return True
        return False

    return [Case("httpx-code", q.text, searcher, lambda ids, q=q: hit(ids, q)) for q in questions]


def docs_cases(settings: Settings) -> list[Case]:
    spec = json.loads(DOCS_SET.read_text(encoding="utf-8"))
    import importlib

    source = Path(importlib.import_module(spec["package"]).__file__).parent / spec["folder"]
    project = "streamlit-docs"
    raw = settings.data_dir / "doc_raw" / project
    if raw.exists():
        shutil.rmtree(raw)
    shutil.copytree(source, raw)
    IngestionManager(settings).ingest(project)
    searcher = build_searcher(settings, project)

    def hit(ids: list[str], file: str) -> bool:
        return any(searcher.snapshot().chunk(cid).source_path == file for cid in ids)

    return [Case("streamlit-docs", q["q"], searcher, lambda ids, f=q["file"]: hit(ids, f)) for q in spec["questions"]]


def observe(cases: list[Case], cfg: ConfidenceSettings) -> list[Row]:
    rows = []
    for qid, case in enumerate(cases):
        first = case.searcher.retrieve([case.query], rerun=False)
        results = [(first, True)] + [
            (case.searcher.retrieve([case.query], Strategy(name), rerun=False), False)
            for name in cfg.rerun_strategies
            if name != first.strategy.value
        ]
        for result, is_first in results:
            rows.append(
                Row(
                    case.corpus,
                    qid,
                    result.strategy.value,
                    is_first,
                    result.confidence.evidence,
                    case.hit(result.ids[: cfg.top]),
                )
            )
    return rows


def fit(rows: list[Row], l2: float = 1.0) -> tuple[dict[str, float], float]:
    """Logistic regression by Newton's method (L2 on the weights, not the bias); every corpus weighs the same."""
    x = np.asarray([[1.0, *(r.signals[s] for s in SIGNALS)] for r in rows])
    y = np.asarray([float(r.label) for r in rows])
    sizes: dict[str, int] = {}
    for r in rows:
        sizes[r.corpus] = sizes.get(r.corpus, 0) + 1
    w_sample = np.asarray([len(rows) / (len(sizes) * sizes[r.corpus]) for r in rows])
    beta = np.zeros(x.shape[1])
    penalty = np.diag([0.0] + [l2] * len(SIGNALS))
    for _ in range(50):
        p = 1 / (1 + np.exp(-(x @ beta)))
        grad = x.T @ (w_sample * (p - y)) + penalty @ beta
        hess = (x * (w_sample * p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return {s: round(float(b), 3) for s, b in zip(SIGNALS, beta[1:], strict=False)}, round(float(beta[0]), 3)


def auc(scores: list[float], labels: list[bool]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=False) if y]
    neg = [s for s, y in zip(scores, labels, strict=False) if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


BANDS = ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.01))


def report(name: str, rows: list[Row], cfg: ConfidenceSettings) -> None:
    scores = [calibrated(r.signals, cfg) for r in rows]
    labels = [r.label for r in rows]
    brier = statistics.mean((s - y) ** 2 for s, y in zip(scores, labels, strict=False))
    print(
        f"\n{name}: n={len(rows)}  hit rate {statistics.mean(labels):.3f}  mean confidence "
        f"{statistics.mean(scores):.3f}  "
        f"Brier {brier:.3f}  AUC {auc(scores, labels):.3f}"
    )
    print("  band        n   mean conf  observed hit rate")
    for lo, hi in BANDS:
        inside = [(s, y) for s, y in zip(scores, labels, strict=False) if lo <= s < hi]
        if inside:
            print(
                f"  {lo:.1f}-{min(hi, 1.0):.1f}  {len(inside):5d}   {statistics.mean(s for s, _ in inside):.3f}      "
                f"{statistics.mean(y for _, y in inside):.3f}"
            )


def rerun_effect(name: str, rows: list[Row], cfg: ConfidenceSettings) -> None:
    """The shipped policy replayed: keep the first result unless it is low, then the attempt with the best
    confidence without `compare_without`'s signals (`comparable`)."""
    by_query: dict[int, list[Row]] = {}
    for r in rows:
        by_query.setdefault(r.qid, []).append(r)
    before, after, reran, changed = [], [], 0, 0
    for attempts in by_query.values():
        first = next(r for r in attempts if r.first)
        kept = first
        if calibrated(first.signals, cfg) < cfg.low:
            reran += 1
            kept = max(attempts, key=lambda r: (comparable(r.signals, cfg), r.first))
            changed += kept is not first
        before.append(first.label)
        after.append(kept.label)
    print(
        f"  re-run at low={cfg.low}: {reran}/{len(by_query)} queries re-ran, {changed} kept another strategy; "
        f"hit@{cfg.top} {statistics.mean(before):.3f} -> {statistics.mean(after):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--work", type=Path, default=Path("data/bench"), help="data root (SciFact already ingested here)"
    )
    parser.add_argument("--scifact", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--scifact-limit", type=int, default=300, help="judged SciFact train queries used (0: all)")
    parser.add_argument("--no-scifact", action="store_true", help="leave SciFact out (when it is not ingested)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a settings override, e.g. retrieval.confidence.top=1",
    )
    args = parser.parse_args()

    overrides = dict(item.split("=", 1) for item in args.set)
    settings = load_settings(overrides={**overrides, "data_dir": str(args.work), "llm.provider": "local"})
    cfg = settings.retrieval.confidence
    cases: list[Case] = []
    if not args.no_scifact:
        cases += beir_cases(settings, args.scifact, "train", "scifact-train", args.scifact_limit, ingest=False)
    cases += beir_cases(settings, CORPORA / "ragstream-docs", "test", "ragstream-docs", 0, ingest=True)
    cases += code_cases(settings)
    cases += docs_cases(settings)
    rows = observe(cases, cfg)
    corpora = sorted({r.corpus for r in rows})

    weights, bias = fit(rows)
    print("fitted on all sets (paste into retrieval.confidence):")
    print(json.dumps({"weights": weights, "bias": bias}))
    fitted = cfg.model_copy(update={"weights": weights, "bias": bias})
    for corpus in corpora:
        held_w, held_b = fit([r for r in rows if r.corpus != corpus])
        held = cfg.model_copy(update={"weights": held_w, "bias": held_b})
        inside = [r for r in rows if r.corpus == corpus]
        report(f"{corpus} (model fitted on the other sets)", inside, held)
        rerun_effect(corpus, inside, fitted)
    report("all sets (model fitted on all)", rows, fitted)
    print("\nconfigured model, for comparison:")
    for corpus in corpora:
        inside = [r for r in rows if r.corpus == corpus]
        rerun_effect(corpus, inside, cfg)


if __name__ == "__main__":
    main()
