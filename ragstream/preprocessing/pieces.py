"""Task 4: cut kept segments into query pieces exactly the way ingestion cuts documents."""

from __future__ import annotations

from ragstream.chunking import Chunker
from ragstream.state import QueryPiece, Segment


def build_pieces(segments: list[Segment], chunker: Chunker) -> list[QueryPiece]:
    pieces: list[QueryPiece] = []
    for seg in segments:
        if not seg.kept_for_retrieval:
            continue
        for k, span in enumerate(chunker.spans(seg.text)):
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
    return pieces
