"""The vector store of record, reached through LangChain's `VectorStore` interface.

`ingestion.vector_store` in config/ragstream.json names a factory, `module:function`, called as
`factory(settings, paths, embeddings)` and used as a context manager that yields a LangChain `VectorStore`
(closing what it opened on exit). The default, `chroma_vector_store`, is `langchain_chroma.Chroma` on one
collection per project and embedding model, cosine space: an embedded `PersistentClient` under the
project's store folder, or a Chroma server (`HttpClient`) when `chroma_url` is set. The collection never
gets an embedding function of its own (Chroma's default would download a model): RAGstream embeds, and
hands the store the vectors it computed (`GivenVectors`). Queries do not read the vector store: each index
generation carries its own vectors (see `snapshot`), so it is opened only by ingestion.
"""

from __future__ import annotations

import importlib
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import urlparse

import chromadb
import numpy as np
from chromadb.config import Settings as ChromaSettings
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from ragstream.errors import ConfigError
from ragstream.settings import EmbeddingSettings, Settings
from ragstream.tenancy.projects import ProjectPaths

_BATCH = 256


def chroma_client(settings: Settings, paths: ProjectPaths) -> chromadb.ClientAPI:
    """The project's Chroma client: embedded under its store folder, or the configured server."""
    options = ChromaSettings(anonymized_telemetry=False)
    if not settings.chroma_url:
        paths.chroma_dir.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(paths.chroma_dir), settings=options)
    url = urlparse(settings.chroma_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigError(f"chroma_url must look like http://host:port, got {settings.chroma_url!r}")
    return chromadb.HttpClient(host=url.hostname, port=url.port or 8000, ssl=url.scheme == "https", settings=options)


def collection_name(project: str, embedding: EmbeddingSettings | None = None) -> str:
    """One collection per project and embedding model, so vectors of different models never mix."""
    if embedding is None or embedding.provider == "local":
        return f"ragstream_{project}_v1"
    slug = "".join(ch if ch.isalnum() else "-" for ch in embedding.model).strip("-")
    return f"ragstream_{project}_{embedding.provider}-{slug}"[:60] + "_v1"


class GivenVectors(Embeddings):
    """The vectors ingestion already computed, handed to a VectorStore as it asks for them.

    A chunk is embedded as its indexed text (with its symbols and heading) and stored as its own text, and
    its vector also goes into the index generation: embedding once and giving the store that vector keeps
    the two identical and costs no second pass. `add_texts` asks `embed_documents` for its texts in order.
    """

    def __init__(self, queries: Embeddings) -> None:
        self.pending: deque[list[float]] = deque()
        self.queries = queries

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if len(texts) > len(self.pending):
            raise ValueError(f"{len(texts)} texts to store but {len(self.pending)} vectors given")
        return [self.pending.popleft() for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.queries.embed_query(text)


@contextmanager
def chroma_vector_store(settings: Settings, paths: ProjectPaths, embeddings: Embeddings) -> Iterator[VectorStore]:
    """The default store: `langchain_chroma.Chroma` on the project's collection, its client closed on exit."""
    from langchain_chroma import Chroma

    client = chroma_client(settings, paths)
    try:
        yield Chroma(
            client=client,
            collection_name=collection_name(paths.name, settings.embedding),
            embedding_function=embeddings,
            collection_metadata={"hnsw:space": "cosine"},
        )
    finally:
        client.close()  # type: ignore[attr-defined]  # every client has close(); chromadb's ClientAPI omits it


VectorStoreFactory = Callable[[Settings, ProjectPaths, Embeddings], AbstractContextManager[VectorStore]]


def vector_store_factory(spec: str) -> VectorStoreFactory:
    """The factory `module:function` names (a ConfigError saying what is wrong otherwise)."""
    module, _, name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"ingestion.vector_store {spec!r} is not an importable module:function ({exc})") from exc
    if not callable(factory):
        raise ConfigError(f"ingestion.vector_store {spec!r} is not callable")
    return factory


class VectorIndex:
    """Ingestion's view of the vector store: add precomputed vectors, delete, list what is stored.

    Use as a context manager (the factory's own closes the store's client)."""

    def __init__(self, paths: ProjectPaths, settings: Settings) -> None:
        from ragstream.embedding.embedder import RagstreamEmbeddings

        self.given = GivenVectors(RagstreamEmbeddings(settings))
        self._opened = vector_store_factory(settings.ingestion.vector_store)(settings, paths, self.given)
        self.store = self._opened.__enter__()

    def __enter__(self) -> VectorIndex:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._opened.__exit__(*exc)

    def upsert(
        self,
        ids: list[str],
        vectors: np.ndarray,
        texts: list[str],
        metadatas: list[dict[str, Any]],
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        """Store precomputed vectors with their texts and metadata under stable ids, in batches."""
        for start in range(0, len(ids), _BATCH):
            end = start + _BATCH
            self.given.pending.extend(np.asarray(v, dtype=np.float32).tolist() for v in vectors[start:end])
            try:
                self.store.add_texts(texts[start:end], metadatas=metadatas[start:end], ids=ids[start:end])
            finally:
                self.given.pending.clear()
            if on_batch:
                on_batch(min(end, len(ids)))

    def delete(self, ids: list[str]) -> None:
        for start in range(0, len(ids), _BATCH * 8):
            self.store.delete(ids=ids[start : start + _BATCH * 8])

    def embeddings(self, ids: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id, when the store gives them back (Chroma does), to carry an index written before
        generations held their own vectors without embedding it again."""
        listing = getattr(self.store, "get", None)
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(ids) if listing else 0, _BATCH * 8):
            got = listing(ids=ids[start : start + _BATCH * 8], include=["embeddings"])  # type: ignore[misc]
            found.update(zip(got["ids"], (np.asarray(v, dtype=np.float32) for v in got["embeddings"]), strict=False))
        return found

    def all_ids(self) -> set[str] | None:
        """Every id the store holds, when it can list them (Chroma can; LangChain's interface cannot, and then
        ingestion trusts its manifest for what is stored)."""
        listing = getattr(self.store, "get", None)
        if listing is None:
            return None
        found: set[str] = set()
        offset = 0
        while True:
            page = listing(include=[], limit=_BATCH * 40, offset=offset)["ids"]
            found.update(page)
            if len(page) < _BATCH * 40:
                return found
            offset += len(page)
