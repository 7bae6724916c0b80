"""Offline condensation never splices or cuts sentences (property test over random multi-chunk documents).

Documents of random sentences, wrapped lines, bullets and headings are cut by the real chunker into
overlapping chunks; whatever the offline A4 picks, every line must be a contiguous span of the one
chunk it cites, and a whole sentence of the document (not one cut at a chunk edge), named at most by a
heading of that chunk that is a name ("### index_store").
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from ragstream.condensing.extractive import condense_extractively
from ragstream.embedding.embedder import get_embedder
from ragstream.settings import ChunkingSettings, Settings
from ragstream.state import Chunk
from ragstream.text.chunk_ids import chunk_id
from ragstream.text.chunking import Chunker

WORDS = [
    "index",
    "chunk",
    "budget",
    "ladder",
    "fusion",
    "manifest",
    "server",
    "review",
    "excerpt",
    "token",
    "store",
    "query",
]
sentence = st.builds(
    lambda words, end: " ".join([words[0].capitalize(), *words[1:]]) + end,
    st.lists(st.sampled_from(WORDS), min_size=4, max_size=14),
    st.sampled_from([".", ".", ".", "?", "!"]),
)
paragraph = st.one_of(
    st.lists(sentence, min_size=1, max_size=5).map(" ".join),
    st.lists(sentence, min_size=1, max_size=3).map(lambda items: "\n".join(f"- {s}" for s in items)),
    st.lists(st.lists(sentence, min_size=2, max_size=3).map(" ".join), min_size=1, max_size=3).map(
        lambda items: "\n".join(f"- {s}" for s in items)
    ),
    st.builds(lambda title, body: f"## {title.capitalize()}\n{body}", st.sampled_from(WORDS), sentence),
    st.builds(lambda a, b, body: f"### {a}_{b}\n\n{body}", st.sampled_from(WORDS), st.sampled_from(WORDS), sentence),
)


def _wrap(text: str, width: int) -> str:
    """Wrap paragraph lines the way documents do, so sentences cross line breaks."""
    out = []
    for line in text.split("\n"):
        words, current = line.split(" "), ""
        for word in words:
            if current and len(current) + len(word) + 1 > width:
                out.append(current)
                current = word
            else:
                current = f"{current} {word}" if current else word
        out.append(current)
    return "\n".join(out)


def _chunks(document: str, chunker: Chunker) -> list[Chunk]:
    return [
        Chunk(
            id=chunk_id("doc.md", "0123456789abcdef", i),
            source_path="doc.md",
            sha256="0123456789abcdef",
            chunk_index=i,
            text=span.slice(document),
            span=span,
        )
        for i, span in enumerate(chunker.spans(document))
    ]


def _normalized(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def small_chunker(base_settings: Settings) -> Chunker:
    base = Chunker.from_settings(base_settings)
    return Chunker(
        ChunkingSettings(chunk_size=220, chunk_overlap=60), base.counter, base_settings.embedding.max_input_tokens
    )


@hyp_settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    paragraphs=st.lists(paragraph, min_size=2, max_size=8),
    width=st.integers(30, 90),
    ask=st.lists(st.sampled_from(WORDS), min_size=2, max_size=5).map(" ".join),
)
def test_condensed_lines_are_whole_sentences_of_the_chunk_they_cite(
    paragraphs: list[str], width: int, ask: str, small_chunker: Chunker, base_settings: Settings
) -> None:
    document = "\n\n".join(_wrap(p, width) for p in paragraphs) + "\n"
    chunks = _chunks(document, small_chunker)
    by_id = {c.id: c for c in chunks}
    settings = base_settings.condenser.model_copy(update={"min_relevance": -1.0, "max_lines": 50})
    lines = condense_extractively(
        [ask], chunks, get_embedder(base_settings.embedding, base_settings.models_dir).embed, settings
    )
    flat_document = _normalized(document)
    sentences = {_normalized(s) for s in re.split(r"(?<=[.!?])\s+|\n(?=- )|\n\n", document)}
    # A list item is one line: whole, or its first sentences where the chunk ends inside it.
    items = [
        re.split(r"(?<=[.!?])\s+", _normalized(item))
        for item in re.findall(r"^- (.*(?:\n(?!- |\n).*)*)", document, re.M)
    ]
    heads = {" ".join(item[:n]) for item in items for n in range(1, len(item) + 1)}
    sentences = {s.removeprefix("- ") for s in sentences} | heads
    for line in lines:
        text = line.text
        named = re.fullmatch(r"`([^`]+)`: (.+)", text, re.S)
        if named:  # a sentence under a heading that is a name, named by it: the heading is in the chunk it cites
            assert re.search(rf"^### {re.escape(named[1])}$", by_id[line.chunk_id].text, re.M), "named by no heading"
            text = named[2]
        assert _normalized(text) in _normalized(by_id[line.chunk_id].text), "not a span of the chunk it cites"
        assert text in flat_document
        assert _normalized(text) in sentences, f"not a whole sentence or list item of the document: {text!r}"
