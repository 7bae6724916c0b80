"""The corpus's text and words are read once per snapshot, and never another snapshot's."""

from __future__ import annotations

from ragstream.gate.coverage import corpus_text, corpus_vocabulary
from ragstream.index.snapshot import Snapshot
from ragstream.state import Chunk, Span


def _snapshot(word: str) -> Snapshot:
    text = f"The {word} page."
    chunk = Chunk(
        id=f"{word}.md@x#0",
        source_path=f"{word}.md",
        sha256="0" * 64,
        chunk_index=0,
        text=text,
        span=Span(start=0, end=len(text)),
    )
    return Snapshot(generation=1, chunks=[chunk], links={}, bm25=None)


def test_each_snapshot_reads_its_own_corpus_even_where_a_freed_one_had_its_id() -> None:
    """Projects in one process (a server, a test run) each have a generation 1, and a freed snapshot's id is often
    the next one's. Keyed by id and generation, a project read another's text (6 of 50 here): a flaky gate."""
    for n in range(50):
        word = f"word{n}"
        snapshot = _snapshot(word)
        assert word in corpus_text(snapshot)
        assert corpus_vocabulary(snapshot).starting_with(word) == [word]
        del snapshot  # freed now: the next snapshot may take its id
