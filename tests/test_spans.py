"""Spans point into the file as it is: for every chunk ingestion cuts and every excerpt the build shows,
the file's text at the recorded span is the chunk's or excerpt's text (a redacted secret aside, which
the file holds in place of its marker), on texts with multi-byte characters, CRLF line ends and secrets.

The file's text is its bytes decoded as UTF-8: spans count characters, as Python's str does."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from ragstream.ingestion.loader import load_document
from ragstream.ingestion.manager import IngestionManager
from ragstream.rendering.excerpts import Excerpt, Sources, hydrated, merged, parent
from ragstream.secrets.scan import scan
from ragstream.settings import Settings, load_settings
from ragstream.text.offsets import Offsets
from tests.helpers import as_in_file

WORDS = ["naïve", "café", "straße", "Übersicht", "日本語", "emoji🙂", "→", "—", "𝔘𝔫𝔦", "cache", "index", "the", "a"]
SECRETS = [
    'password = "Xk29vLq81mZpT4wR"',
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "rev 326b9431c761e1ef1e00b9f760d1f654c8db48c6",
    "https://user:pa55w0rd-Q7x@example.com/repo",
]


def sentences() -> st.SearchStrategy[str]:
    word = st.sampled_from(WORDS) | st.text(st.characters(codec="utf-8", categories=["L", "N"]), min_size=1, max_size=9)
    return st.lists(word, min_size=1, max_size=14).map(lambda ws: " ".join(ws).capitalize() + ".")


documents = st.lists(
    st.one_of(
        st.lists(sentences(), min_size=1, max_size=6).map(" ".join),
        st.sampled_from(SECRETS),
        st.sampled_from(["# Überblick 🙂", "- item → one", "```", "| a | b |"]),
    ),
    min_size=1,
    max_size=40,
).flatmap(lambda blocks: st.sampled_from(["\n\n", "\n", "\r\n\r\n"]).map(lambda sep: sep.join(blocks) + "\n"))


@pytest.fixture(scope="module")
def small_chunks(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    data = tmp_path_factory.mktemp("spans") / "data"
    return load_settings(
        overrides={
            "data_dir": str(data),
            "chunking.chunk_size": 160,
            "chunking.chunk_overlap": 40,
            "llm.provider": "local",
        }
    )


def check(shown: str, start: int, end: int, file_text: str) -> None:
    assert as_in_file(shown, file_text[start:end]), (shown, file_text[start:end])


@hyp_settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=documents)
def test_every_chunk_and_excerpt_is_the_files_text_at_its_span(
    small_chunks: Settings, tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    root = tmp_path_factory.mktemp("doc")
    path = root / "notes.md"
    path.write_bytes(text.encode("utf-8"))
    file_text = path.read_bytes().decode("utf-8")
    loaded = load_document(path, small_chunks.ingestion.max_file_bytes)
    indexed = scan(loaded.text, "notes.md", small_chunks.secrets).text
    manager = IngestionManager(small_chunks)
    chunks = manager._chunks_for("notes.md", loaded.sha256, 0.0, indexed, "notes", loaded.kind, loaded.text)
    assert chunks
    for chunk in chunks:
        check(chunk.text, chunk.span.start, chunk.span.end, file_text)
        assert chunk.metadata["line_start"] == file_text.count("\n", 0, chunk.span.start) + 1
    sources = Sources(root, small_chunks)
    excerpts = merged([hydrated(c, sources, small_chunks.excerpts.sentence_reach_chars) for c in chunks])
    assert all(e.doc is not None for e in excerpts), "every chunk reads back as indexed"
    widened = [Excerpt(e.members, *found[:2], found[2], e.doc) for e in excerpts if (found := parent(e))]
    for excerpt in [*excerpts, *widened]:
        record = excerpt.record()
        check(record.text, record.start, record.end, file_text)
        assert record.lines is None or record.lines[0] == file_text.count("\n", 0, record.start) + 1


@pytest.mark.parametrize(
    ("document", "indexed"),
    [
        ("a secret=Xk29vLq8 here\nnext line", "a secret=[REDACTED: Secret Keyword] here\nnext line"),
        ("k AKIAIOSFODNN7EXAMPLE\n→ after", "k [REDACTED: AWS Access Key]\n→ after"),
        ("no secret at all: naïve → café", "no secret at all: naïve → café"),
    ],
)
def test_offsets_map_both_ways_outside_secrets(document: str, indexed: str) -> None:
    offsets = Offsets(document, indexed)
    for word in ("here", "next", "after", "naïve", "café", "line"):
        if word in indexed:
            at = indexed.index(word)
            assert offsets.to_document(at) == document.index(word)
            assert offsets.to_indexed(document.index(word)) == at
    assert offsets.to_document(len(indexed), end=True) == len(document)
