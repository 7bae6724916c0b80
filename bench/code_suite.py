"""The code questions as a `ragstream eval` suite: does a question find the definition that answers it?

Copies an installed package's source (default: httpx, from bench/corpora/httpx-code.json; test folders
left out) into OUT/PACKAGE/ and writes OUT/PACKAGE.jsonl, one question a line whose relevant passage is
the answering definition's lines (found with Python's ast in the installed version, so the questions
survive small version changes). `ragstream eval` then measures it like any suite: hit@1, hit@5, MRR@10
and nDCG@10 for the keyword, dense, fused, reranked and gated lists (a hit is a chunk of the right file
overlapping those lines), and the final prompt's checks.

Run: python bench/code_suite.py [--questions bench/corpora/httpx-code.json] [--out data/bench-code]
     ragstream eval data/bench-code/httpx.jsonl
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from ragstream.state import Chunk

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


def write_suite(questions_file: Path, out: Path) -> Path:
    """OUT/PACKAGE/ (the installed source; ingestion re-embeds only files whose content changed) and
    OUT/PACKAGE.jsonl."""
    package = json.loads(questions_file.read_text(encoding="utf-8"))["package"]
    corpus = out / package
    copy_package(package, corpus)
    suite = out / f"{package}.jsonl"
    rows = [
        {"id": f"q{n:02d}", "question": q.text, "relevant": [{"path": q.file, "lines": [q.first, q.last]}]}
        for n, q in enumerate(load_questions(questions_file, corpus), start=1)
    ]
    suite.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--out", type=Path, default=Path("data/bench-code"), help="folder the suite is written to")
    args = parser.parse_args()
    suite = write_suite(args.questions, args.out)
    print(f"wrote {suite}; measure it with: ragstream eval {suite}")


if __name__ == "__main__":
    main()
