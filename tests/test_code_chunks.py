"""Code corpora: whole definitions with their line ranges, identifiers found by their words, and
excerpts a user can cite as path:line."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from ragstream.code.chunks import CodePiece, CodeSplitter
from ragstream.code.languages import load_languages
from ragstream.code.symbols import symbols_of
from ragstream.condensing.extractive import condense_extractively
from ragstream.embedding.embedder import get_embedder
from ragstream.ingestion.manager import IngestionManager
from ragstream.rendering.styles import fence
from ragstream.retrieval.search import ProjectSearcher
from ragstream.settings import Settings, load_settings
from ragstream.state import Chunk
from ragstream.strategies import Strategy
from ragstream.tenancy.projects import project_paths
from ragstream.text.chunking import Chunker

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return load_settings(overrides={"data_dir": str(tmp_path_factory.mktemp("code")), "llm.provider": "local"})


@pytest.fixture(scope="module")
def splitter(settings: Settings) -> CodeSplitter:
    return CodeSplitter(Chunker.from_settings(settings))


def _split(splitter: CodeSplitter, settings: Settings, name: str, text: str) -> list[CodePiece]:
    language = load_languages(settings.config_dir).of(name)
    assert language is not None, name
    return splitter.split(text, language)


def _long_function(name: str, statements: int) -> str:
    body = "\n".join(
        f"    total_{i} = compute_value(\n        first_argument={i},\n        second_argument={i * 2},\n    )"
        for i in range(statements)
    )
    return f'def {name}(records: list[int]) -> int:\n    """Adds the computed values."""\n{body}\n    return 0\n'


PY_SOURCE = (
    '"""A module that scores matches."""\n\nimport math\nfrom typing import Any\n\n\n'
    + textwrap.dedent(
        '''
        class Scorer:
            """Scores candidates against a query."""

            def __init__(self, weight: float) -> None:
                self.weight = weight

        '''
    ).lstrip()
    + "\n".join(
        f'    def method_{i}(self, value: float) -> float:\n        """Scaled value number {i}."""\n'
        + "\n".join(f"        value = value * self.weight + {j}  # step {j} of method {i}" for j in range(6))
        + "\n        return value\n"
        for i in range(8)
    )
    + "\n\n"
    + _long_function("aggregate_totals", 40)
    + "\n\ndef best_match(candidates: list[str], query: str) -> str:\n"
    '    """The candidate closest to the query."""\n'
    "    return min(candidates, key=lambda c: abs(len(c) - len(query)))\n"
)


def _texts(pieces: list[CodePiece], text: str) -> list[str]:
    return [text[p.span.start : p.span.end] for p in pieces]


def _statement_starts(text: str) -> set[int]:
    return {node.lineno for node in ast.walk(ast.parse(text)) if isinstance(node, ast.stmt)}


def test_python_chunks_cover_the_file_in_whole_lines_and_cut_only_at_statements(splitter, settings) -> None:
    pieces = _split(splitter, settings, "scoring.py", PY_SOURCE)
    texts = _texts(pieces, PY_SOURCE)
    assert "".join(texts) == PY_SOURCE  # exact coverage, in order, no overlap
    assert all(t.endswith("\n") for t in texts)  # never inside a line
    lines = PY_SOURCE.split("\n")
    starts = _statement_starts(PY_SOURCE)
    for piece in pieces[1:]:
        first_code = next(n for n in range(piece.first, piece.last + 1) if lines[n - 1].strip())
        assert first_code in starts or lines[first_code - 1].lstrip().startswith(("#", "@")), piece
    counter = splitter.chunker.counter
    assert all(len(t) <= splitter.max_chars and counter.count(t) <= splitter.max_tokens for t in texts)


def test_a_long_function_is_cut_at_statements_with_its_signature_kept_with_its_body(splitter, settings) -> None:
    pieces = _split(splitter, settings, "scoring.py", PY_SOURCE)
    texts = _texts(pieces, PY_SOURCE)
    parts = [
        (p, t) for p, t in zip(pieces, texts, strict=False) if any(s.name == "aggregate_totals" for s in p.symbols)
    ]
    assert len(parts) >= 3, "a 160-line function cannot fit one chunk"
    head, *rest = parts
    assert "def aggregate_totals(" in head[1] and "total_0 = compute_value(" in head[1]  # signature + body start
    assert all(s.part for p, _ in rest for s in p.symbols if s.name == "aggregate_totals")
    for _, text in rest:
        assert text.lstrip().startswith("total_") or text.lstrip().startswith("return"), text[:60]
    symbol = next(s for s in head[0].symbols if s.name == "aggregate_totals")
    assert (symbol.kind, symbol.doc) == ("function", "Adds the computed values.")
    assert PY_SOURCE.split("\n")[symbol.first - 1].startswith("def aggregate_totals(")


def test_a_long_class_becomes_its_header_and_whole_methods(splitter, settings) -> None:
    pieces = _split(splitter, settings, "scoring.py", PY_SOURCE)
    texts = _texts(pieces, PY_SOURCE)
    head = next(
        t for p, t in zip(pieces, texts, strict=False) if any(s.name == "Scorer" and not s.part for s in p.symbols)
    )
    assert "class Scorer:" in head and "def __init__" in head
    for i in range(8):
        holding = [t for t in texts if f"def method_{i}(" in t]
        assert len(holding) == 1 and f"step 5 of method {i}" in holding[0]  # each method whole
    names = {s.name for p in pieces for s in p.symbols}
    assert {"Scorer", "Scorer.__init__", "Scorer.method_3", "best_match"} <= names


def test_ragstreams_own_sources_split_exactly(splitter, settings) -> None:
    for path in sorted((REPO / "ragstream").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        pieces = _split(splitter, settings, path.name, text)
        assert "".join(_texts(pieces, text)) == text, path
        for piece in pieces:
            for symbol in piece.symbols:
                assert piece.first <= symbol.last and symbol.first <= piece.last or not symbol.part, (path, symbol)


GO_SOURCE = textwrap.dedent(
    """\
    package store

    import "fmt"

    // Store keeps values by key.
    type Store struct {
    \tvalues map[string]int
    }

    // Get returns the value stored under key.
    func (s *Store) Get(key string) (int, error) {
    \tvalue, ok := s.values[key]
    \tif !ok {
    \t\treturn 0, fmt.Errorf("missing %s", key)
    \t}
    \treturn value, nil
    }
    """
)


def test_go_definitions_come_from_tree_sitter_with_receiver_qualified_names(splitter, settings) -> None:
    pieces = _split(splitter, settings, "store.go", GO_SOURCE)
    assert "".join(_texts(pieces, GO_SOURCE)) == GO_SOURCE
    symbols = {s.name: s for p in pieces for s in p.symbols}
    assert (
        symbols["Store.Get"].kind == "method" and symbols["Store.Get"].doc == "Get returns the value stored under key."
    )
    assert (symbols["Store.Get"].first, symbols["Store.Get"].last) == (10, 17)  # from its doc comment to its brace
    assert symbols["Store"].kind == "type"


def test_typescript_exported_class_methods_are_named(splitter, settings) -> None:
    source = "/** A cache. */\nexport class Cache {\n  get(key: string): number {\n    return 1;\n  }\n}\n"
    pieces = _split(splitter, settings, "cache.ts", source)
    symbols = {s.name: s for p in pieces for s in p.symbols}
    assert symbols["Cache"].first == 1 and symbols["Cache"].doc == "A cache."
    assert symbols["Cache.get"].kind == "method"


def test_a_file_that_does_not_parse_is_still_split_whole_and_exactly(splitter, settings) -> None:
    broken = "def broken(:\n    pass\n\n" + "x = 1\n" * 400
    pieces = _split(splitter, settings, "broken.py", broken)
    assert "".join(_texts(pieces, broken)) == broken and len(pieces) > 1
    assert all(not p.symbols for p in pieces)


@pytest.fixture(scope="module")
def code_project(settings: Settings) -> str:
    raw = Path(settings.data_dir) / "doc_raw" / "codebase"
    raw.mkdir(parents=True)
    (raw / "scoring.py").write_text(PY_SOURCE, encoding="utf-8")
    (raw / "store.go").write_text(GO_SOURCE, encoding="utf-8")
    (raw / "notes.md").write_text("# Notes\n\nThe scorer weights every candidate.\n", encoding="utf-8")
    for generated in ("__pycache__/scoring.cpython-311.pyc", "node_modules/left-pad/index.js"):
        (raw / generated).parent.mkdir(parents=True)
        (raw / generated).write_text("module.exports = function leftPad() {}\n", encoding="utf-8")
    stats = IngestionManager(settings).ingest("codebase")
    assert stats.files_seen == 3 and not stats.skipped  # caches and installed dependencies are not walked
    return "codebase"


def _retriever(settings: Settings, project: str) -> ProjectSearcher:
    return ProjectSearcher(
        project_paths(settings, project), settings.retrieval, get_embedder(settings.embedding, settings.models_dir)
    )


def _chunks(settings: Settings, project: str) -> list[Chunk]:
    return _retriever(settings, project).snapshot().chunks


@pytest.mark.parametrize("strategy", [Strategy.DENSE, Strategy.KEYWORD, Strategy.HYBRID])
def test_a_question_in_words_finds_the_function_named_by_them(settings, code_project, strategy) -> None:
    retriever = _retriever(settings, code_project)
    results = retriever.retrieve(["which function picks the best match for a query"], strategy)
    top = retriever.snapshot().chunk(results.ids[0])
    assert top.source_path == "scoring.py" and "def best_match(" in top.text


def test_code_excerpts_are_fenced_with_language_and_lines(settings, code_project) -> None:
    chunks = _chunks(settings, code_project)
    go = next(c for c in chunks if c.source_path == "store.go" and "func (s *Store) Get" in c.text)
    first, last = go.metadata["line_start"], go.metadata["line_end"]
    assert GO_SOURCE.split("\n")[first - 1] != "" and "".join(GO_SOURCE.splitlines(True)[first - 1 : last]) == go.text
    opening = fence(go).split("\n", 1)[0]
    assert opening.startswith('~~~~go excerpt source="store.go"') and f'lines="{first}-{last}"' in opening
    prose = next(c for c in chunks if c.source_path == "notes.md")
    assert fence(prose).startswith('~~~~excerpt source="notes.md"') and 'lines="1-3"' in fence(prose)


def test_offline_condensing_names_definitions_and_never_copies_code(settings, code_project) -> None:
    chunks = [c for c in _chunks(settings, code_project) if c.source_path != "notes.md"]
    embedder = get_embedder(settings.embedding, settings.models_dir)
    lines = condense_extractively(
        ["Where is the value stored under a key looked up?"], chunks, embedder.embed_together, settings.condenser
    )
    assert lines, "a relevant definition is named"
    assert all(line.cue == "definition" and line.section == "facts" for line in lines)
    get = next(line for line in lines if "`Store.Get(" in line.text)
    # what the definition does: its signature from the name on, where it is, its doc comment's first sentence
    assert (
        get.text
        == "method `Store.Get(key string) (int, error)` (store.go:10-17): Get returns the value stored under key."
    )
    assert all(
        re.fullmatch(r"\w+ `[\w.]+[^`]*` \([\w./]+:\d+(-\d+)?\)( \(part shown\))?(: .+)?", line.text) for line in lines
    )
    assert len({re.match(r"[\w.]+", line.text.split("`")[1]).group() for line in lines}) == len(
        lines
    )  # each definition named once
    stripped = [
        c.model_copy(update={"metadata": {k: v for k, v in c.metadata.items() if k != "symbols"}}) for c in chunks
    ]
    assert (
        condense_extractively(["Where is the value looked up?"], stripped, embedder.embed_together, settings.condenser)
        == []
    )
    assert all(symbols_of(c) == [] for c in stripped)
