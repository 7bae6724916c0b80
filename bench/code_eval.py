"""Retrieval quality on a code corpus: does a question find the definition that answers it?

Copies an installed package's source (default: httpx, from bench/corpora/httpx-code.json; test
folders left out) into a bench project, ingests it with the shipped settings and asks each question.
A hit is a retrieved chunk of the right file whose lines overlap the answering definition's lines
(found with Python's ast, so no chunk metadata is needed and any chunker can be compared). Prints
hit@1, hit@5, MRR@10 and nDCG@10 per strategy and for the shipped default (strategy chosen per question, then
the default reranker), and the mean size of the chunk that answered.

Run: python bench/code_eval.py [--questions bench/corpora/httpx-code.json] [--work data/bench-code]
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import math
import shutil
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragstream.ingestion.manager import IngestionManager
from ragstream.retrieval.chunks import rerank
from ragstream.retrieval.factory import build_reranker, build_searcher
from ragstream.settings import load_settings
from ragstream.state import Chunk
from ragstream.strategies import Strategy

QUESTIONS = Path(__file__).resolve().parent / "corpora" / "httpx-code.json"


@dataclass(frozen=True)
class Question:
    text: str
    file: str
    first: int
    last: int


def definitions(source: str) -> dict[str, tuple[int, int]]:
    """Qualified name -> (first line with decorators, last line)."""
    found: dict[str, tuple[int, int]] = {}

    def walk(nodes: list[ast.stmt], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + node.name
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found.setdefault(name, (first, node.end_lineno or node.lineno))
                if isinstance(node, ast.ClassDef):
                    walk(node.body, name + ".")

    walk(ast.parse(source).body, "")
    return found


def copy_package(package: str, target: Path) -> Path:
    root = Path(importlib.import_module(package).__file__).parent
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(root, target, ignore=shutil.ignore_patterns("__pycache__", "tests", "test", "*.pyc", "*.so"))
    return root


def load_questions(path: Path, root: Path) -> list[Question]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    questions = []
    for entry in raw["questions"]:
        first, last = definitions((root / entry["file"]).read_text(encoding="utf-8"))[entry["definition"]]
        questions.append(Question(entry["q"], entry["file"], first, last))
    return questions


def lines(chunk: Chunk, texts: dict[str, str]) -> tuple[int, int]:
    text = texts[chunk.source_path]
    return text.count("\n", 0, chunk.span.start) + 1, text.count("\n", 0, max(chunk.span.start, chunk.span.end - 1)) + 1


def evaluate(
    label: str,
    search: Callable[[str], list[Chunk]],
    questions: list[Question],
    texts: dict[str, str],
    misses: bool = False,
) -> None:
    ranks: list[int | None] = []
    sizes: list[int] = []
    for q in questions:
        found = search(q.text)[:10]
        rank = None
        for i, chunk in enumerate(found, start=1):
            first, last = lines(chunk, texts)
            if chunk.source_path == q.file and first <= q.last and q.first <= last:
                rank = i
                sizes.append(last - first + 1)
                break
        ranks.append(rank)
        if misses and (rank is None or rank > 5):
            top = ", ".join(f"{c.source_path}:{'-'.join(map(str, lines(c, texts)))}" for c in found[:3])
            print(f"  miss: {q.text} (wants {q.file}:{q.first}-{q.last}; got {top})")
    hit1 = sum(r == 1 for r in ranks) / len(ranks)
    hit5 = sum(r is not None and r <= 5 for r in ranks) / len(ranks)
    mrr = sum(1 / r for r in ranks if r) / len(ranks)
    ndcg = sum(1 / math.log2(r + 1) for r in ranks if r) / len(ranks)  # one answering definition per question
    size = f"{statistics.mean(sizes):.0f} lines" if sizes else "-"
    print(
        f"{label:<44} hit@1 {hit1:.3f}  hit@5 {hit5:.3f}  MRR@10 {mrr:.3f}  nDCG@10 {ndcg:.3f}  answering chunk {size}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--misses", action="store_true", help="print the questions whose answer is not in the top 5")
    parser.add_argument("--work", type=Path, default=Path("data/bench-code"), help="data root for the bench project")
    args = parser.parse_args()

    package = json.loads(args.questions.read_text(encoding="utf-8"))["package"]
    settings = load_settings(overrides={"data_dir": str(args.work), "llm.provider": "local"})
    raw = settings.data_dir / "doc_raw" / package
    root = copy_package(package, raw)
    questions = load_questions(args.questions, root)
    stats = IngestionManager(settings).ingest(package)
    print(stats.summary())
    texts = {p.relative_to(raw).as_posix(): p.read_text(encoding="utf-8") for p in raw.rglob("*.py")}
    print(f"{len(questions)} questions over {len(texts)} files of {package}")

    searcher = build_searcher(settings, package)
    reranker = build_reranker(settings)

    def chunks(ids: list[str]) -> list[Chunk]:
        return [searcher.snapshot().chunk(cid) for cid in ids]

    for strategy in (Strategy.DENSE, Strategy.KEYWORD, Strategy.HYBRID):
        evaluate(
            strategy.value,
            lambda text, s=strategy: chunks(searcher.retrieve([text], s).ids),
            questions,
            texts,
            args.misses,
        )

    def shipped(text: str) -> list[Chunk]:
        result = searcher.retrieve([text])
        return rerank(text, chunks(result.ids), reranker, searcher)[0]

    evaluate(f"shipped defaults: chosen strategy + {reranker.name}", shipped, questions, texts, args.misses)


if __name__ == "__main__":
    main()
