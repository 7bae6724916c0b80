"""RAGstream: turn a raw prompt into a transparent, document-grounded SuperPrompt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragstream.errors import RagstreamError
from ragstream.state import Chunk, Stage, SuperPrompt

if TYPE_CHECKING:
    from ragstream.app.controller import AppController
    from ragstream.orchestration.graph import build_graph

__all__ = ["AppController", "Chunk", "RagstreamError", "Stage", "SuperPrompt", "build_graph"]


def __getattr__(name: str) -> Any:
    """The controller and graph import LangGraph, Chroma and the agents: load them on first use."""
    if name == "AppController":
        from ragstream.app.controller import AppController

        return AppController
    if name == "build_graph":
        from ragstream.orchestration.graph import build_graph

        return build_graph
    raise AttributeError(f"module 'ragstream' has no attribute {name!r}")
