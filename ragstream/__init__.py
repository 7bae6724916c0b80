"""RAGstream: turn a raw prompt into a transparent, document-grounded SuperPrompt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragstream.errors import RagstreamError

if TYPE_CHECKING:
    from ragstream.app.controller import AppController
    from ragstream.app.session import RunResult, RunSession
    from ragstream.app.workspace import Workspace
    from ragstream.embedding.embedder import RagstreamEmbeddings
    from ragstream.orchestration.graph import build_graph
    from ragstream.rendering.styles import export_prompt
    from ragstream.retrieval.langchain_retriever import RagstreamRetriever
    from ragstream.state import Chunk, Stage, SuperPrompt

__all__ = [
    "AppController",
    "Chunk",
    "RagstreamEmbeddings",
    "RagstreamError",
    "RagstreamRetriever",
    "RunResult",
    "RunSession",
    "Stage",
    "SuperPrompt",
    "Workspace",
    "build_graph",
    "export_prompt",
]
_LAZY = {
    "AppController": "ragstream.app.controller",
    "RunResult": "ragstream.app.session",
    "RunSession": "ragstream.app.session",
    "Workspace": "ragstream.app.workspace",
    "build_graph": "ragstream.orchestration.graph",
    "export_prompt": "ragstream.rendering.styles",
    "RagstreamRetriever": "ragstream.retrieval.langchain_retriever",
    "RagstreamEmbeddings": "ragstream.embedding.embedder",
    "Chunk": "ragstream.state",
    "Stage": "ragstream.state",
    "SuperPrompt": "ragstream.state",
}


def __getattr__(name: str) -> Any:
    """The session, workspace, graph and LangChain parts import LangGraph, LangChain and models, the state
    pydantic: load on use (`ragstream --help` imports this package and none of them)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ragstream' has no attribute {name!r}")
