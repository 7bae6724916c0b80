"""PreProcessing (A0): Tasks 1-4, deterministic, from raw text to traceable query pieces."""

from ragstream.preprocessing.canonicalize import HeaderMapper, UnmappedHeader
from ragstream.preprocessing.pipeline import preprocess, validate_prompt

__all__ = ["HeaderMapper", "UnmappedHeader", "preprocess", "validate_prompt"]
