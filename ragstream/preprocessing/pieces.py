"""Task 4: cut kept segments into query pieces exactly the way ingestion cuts documents."""

from __future__ import annotations

from collections.abc import Iterable

from ragstream.state import QueryPiece, Segment, Span
from ragstream.text.asking import topic_start
from ragstream.text.chunking import Chunker


def build_pieces(
    segments: list[Segment], chunker: Chunker, max_pieces: int | None = None, deliverables: Iterable[str] = ()
) -> list[QueryPiece]:
    """Every piece of every kept segment; beyond `max_pieces`, the heaviest pieces (first ones first on a
    tie) search and the others stay in the state with `kept_for_retrieval` false, so a huge prompt costs
    retrieval no more than a long one and says what it left out. A segment that opens by asking for a piece of
    writing is searched from where what the writing is about starts (`topic_start`): the search is for the topic."""
    written = tuple(deliverables)
    pieces: list[QueryPiece] = []
    for seg in segments:
        if not seg.kept_for_retrieval:
            continue
        for k, whole in enumerate(chunker.spans(seg.text)):
            framing = topic_start(whole.slice(seg.text), written) if k == 0 else 0
            span = Span(start=whole.start + framing, end=whole.end)
            pieces.append(
                QueryPiece(
                    piece_id=f"{seg.id}_p{k}",
                    parent_text_id=seg.id,
                    canon_type=seg.canon_type,
                    text_piece=span.slice(seg.text),
                    weight=seg.weight,
                    parent_span=seg.span,
                    piece_span=span,
                )
            )
    if max_pieces is not None and len(pieces) > max_pieces:
        searched = set(sorted(range(len(pieces)), key=lambda i: (-pieces[i].weight, i))[:max_pieces])
        pieces = [
            p if i in searched else p.model_copy(update={"kept_for_retrieval": False}) for i, p in enumerate(pieces)
        ]
    return pieces
