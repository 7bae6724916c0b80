"""RAGstream: turn a raw prompt into a transparent, document-grounded SuperPrompt."""

from ragstream.errors import RagstreamError
from ragstream.state import Chunk, Stage, SuperPrompt

__all__ = ["Chunk", "RagstreamError", "Stage", "SuperPrompt"]
