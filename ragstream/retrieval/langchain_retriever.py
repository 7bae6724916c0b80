"""RAGstream's retrieval as a LangChain retriever: the same searcher, strategies and index.

    from ragstream import RagstreamRetriever
    retriever = RagstreamRetriever(project="notes", top_k=5)     # or k=5, LangChain's usual name
    docs = retriever.invoke("How are checkpoints written?")
    docs = retriever.invoke("How are checkpoints written?", k=2)  # a per-call limit, as LangChain callers pass it

Each `Document` carries its chunk id, source path, sha256, span (and line range, language, title or
heading where known), the score of every retriever that found it, and the strategy and fallback rung
that served the query.
"""

from __future__ import annotations

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from ragstream.errors import InputError
from ragstream.index.manifest import indexed_project
from ragstream.retrieval.factory import build_searcher
from ragstream.retrieval.search import ProjectSearcher
from ragstream.settings import Settings, default_settings
from ragstream.strategies import Strategy

_PASSED_ON = ("line_start", "line_end", "language", "title", "heading")  # ingestion metadata a reader can cite


class RagstreamRetriever(BaseRetriever):
    """A project's documents, retrieved by RAGstream (hybrid by default), as LangChain `Document`s."""

    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True)

    project: str
    strategy: Strategy | None = None  # None: chosen from the query, as in the pipeline
    top_k: int = Field(default=10, gt=0, alias="k")
    settings: Settings = Field(default_factory=default_settings, exclude=True)
    _searcher: ProjectSearcher | None = PrivateAttr(default=None)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        """At most `k` documents when the call gives one (LangChain's per-call keyword), else `top_k`."""
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k <= 0):
            raise InputError(f"k must be a positive integer, got {k!r}")
        if self._searcher is None:
            indexed_project(self.settings, self.project)  # a ProjectError that says what to do
            self._searcher = build_searcher(self.settings, self.project)
        result = self._searcher.retrieve([query], self.strategy)
        snapshot = self._searcher.snapshot()
        documents = []
        for item in result.results[: k or self.top_k]:
            chunk = snapshot.chunk(item.chunk_id)
            scores = {f"score_{name}": value for name, value in item.scores.items()}
            documents.append(
                Document(
                    page_content=chunk.text,
                    id=chunk.id,
                    metadata={
                        "chunk_id": chunk.id,
                        "source": chunk.source_path,
                        "sha256": chunk.sha256,
                        "start": chunk.span.start,
                        "end": chunk.span.end,
                        "score": item.score,
                        **scores,
                        "strategy": result.strategy.value,
                        "rung": result.rung,
                        "confidence": result.confidence.score,
                        **{k: v for k, v in chunk.metadata.items() if k in _PASSED_ON},
                    },
                )
            )
        return documents
