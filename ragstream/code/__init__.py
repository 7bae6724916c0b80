"""Source code as a corpus: languages, definitions (outlines), structure-aware chunks, identifiers."""
