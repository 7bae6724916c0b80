"""The vector store of record: one Chroma collection per project and embedding model, cosine space.

Embedded `PersistentClient` under the project's store folder by default; `chroma_url` switches to a
Chroma server (`HttpClient`). Only chromadb's public API is used, and the collection has no embedding
function of its own (Chroma's default would download a model): RAGstream embeds, Chroma stores. A
LangChain user opens the same collection with `langchain_chroma.Chroma(client=..., collection_name=...,
embedding_function=RagstreamEmbeddings(...))`. Queries do not read Chroma: each index generation
carries its own vectors (see `snapshot`), so chromadb is imported only by ingestion.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlparse

import chromadb
import numpy as np
from chromadb.api.types import Metadata
from chromadb.config import Settings as ChromaSettings

from ragstream.errors import ConfigError
from ragstream.projects import ProjectPaths
from ragstream.settings import EmbeddingSettings, Settings

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


class ChromaStore:
    """Use as a context manager: closing the client releases the embedded database's files."""

    def __init__(self, paths: ProjectPaths, settings: Settings) -> None:
        self.client = chroma_client(settings, paths)
        self.collection = self.client.get_or_create_collection(
            collection_name(paths.name, settings.embedding),
            metadata={"hnsw:space": "cosine"},
            embedding_function=None,
        )

    def __enter__(self) -> ChromaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()  # type: ignore[attr-defined]  # every client has close(); chromadb's ClientAPI omits it

    def upsert(
        self,
        ids: list[str],
        vectors: np.ndarray,
        texts: list[str],
        metadatas: list[Metadata],
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        """Store precomputed vectors with their texts and metadata, in batches."""
        for start in range(0, len(ids), _BATCH):
            end = start + _BATCH
            self.collection.upsert(
                ids=ids[start:end],
                embeddings=vectors[start:end],
                documents=texts[start:end],
                metadatas=metadatas[start:end],
            )
            if on_batch:
                on_batch(min(end, len(ids)))

    def delete(self, ids: list[str]) -> None:
        for start in range(0, len(ids), _BATCH * 8):
            self.collection.delete(ids=ids[start : start + _BATCH * 8])

    def all_ids(self) -> set[str]:
        return set(self.collection.get(include=[])["ids"])

    def count(self) -> int:
        return self.collection.count()

    def embeddings(self, ids: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (to carry an index written before generations held their own vectors)."""
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), _BATCH * 8):
            got = self.collection.get(ids=ids[start : start + _BATCH * 8], include=["embeddings"])
            vectors = got["embeddings"]
            assert vectors is not None  # include=["embeddings"] returns them
            found.update(zip(got["ids"], (np.asarray(v, dtype=np.float32) for v in vectors), strict=False))
        return found
