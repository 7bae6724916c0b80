"""The vector store: one Chroma collection per project, cosine space, our embeddings only.

Embedded `PersistentClient` under the project's store folder by default; `chroma_url` switches to
a Chroma server (`HttpClient`). Access goes through langchain-chroma.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlparse

import chromadb
from chromadb.api.shared_system_client import SharedSystemClient
from chromadb.config import Settings as ChromaSettings
from langchain_chroma import Chroma

from ragstream.embedding import LangChainEmbeddings
from ragstream.errors import ConfigError
from ragstream.projects import ProjectPaths
from ragstream.settings import EmbeddingSettings, Settings

_UPSERT_BATCH = 256


def _client(chroma_url: str | None, paths: ProjectPaths) -> chromadb.ClientAPI:
    settings = ChromaSettings(anonymized_telemetry=False)
    if not chroma_url:
        if not paths.chroma_dir.exists():
            # The folder was deleted (or never existed): forget any in-process system still bound
            # to the old files, which would otherwise fail with "readonly database".
            SharedSystemClient._identifier_to_system.pop(str(paths.chroma_dir), None)
        paths.chroma_dir.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(paths.chroma_dir), settings=settings)
    url = urlparse(chroma_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigError(f"chroma_url must look like http://host:port, got {chroma_url!r}")
    return chromadb.HttpClient(
        host=url.hostname, port=url.port or 8000, ssl=url.scheme == "https", settings=settings
    )


def collection_name(project: str, embedding: EmbeddingSettings | None = None) -> str:
    """One collection per project and embedding model, so vectors of different models never mix."""
    if embedding is None or embedding.provider == "local":
        return f"ragstream_{project}_v1"
    slug = "".join(ch if ch.isalnum() else "-" for ch in embedding.model).strip("-")
    return f"ragstream_{project}_{embedding.provider}-{slug}"[:60] + "_v1"


class ChromaStore:
    def __init__(self, paths: ProjectPaths, settings: Settings) -> None:
        self._vs = Chroma(
            collection_name=collection_name(paths.name, settings.embedding),
            embedding_function=LangChainEmbeddings(settings.embedding, settings.models_dir),
            client=_client(settings.chroma_url, paths),
            collection_metadata={"hnsw:space": "cosine"},
        )

    def upsert(
        self, ids: list[str], texts: list[str], metadatas: list[dict], on_batch: Callable[[int], None] | None = None
    ) -> None:
        """Embed and store in batches; `on_batch(done)` reports progress after each."""
        for start in range(0, len(ids), _UPSERT_BATCH):
            end = start + _UPSERT_BATCH
            self._vs.add_texts(texts[start:end], metadatas=metadatas[start:end], ids=ids[start:end])
            if on_batch:
                on_batch(min(end, len(ids)))

    def delete(self, ids: list[str]) -> None:
        for start in range(0, len(ids), _UPSERT_BATCH * 8):
            self._vs.delete(ids=ids[start : start + _UPSERT_BATCH * 8])

    def all_ids(self) -> set[str]:
        return set(self._vs.get(include=[])["ids"])

    def count(self) -> int:
        return len(self.all_ids())

    def search(self, vector: list[float], k: int) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity), best first.

        Asks the collection behind langchain-chroma for ids and distances only: texts and metadata
        come from the index snapshot, and fetching them here would double the query time.
        """
        got = self._vs._collection.query(query_embeddings=[vector], n_results=k, include=["distances"])
        return [(cid, 1.0 - float(d)) for cid, d in zip(got["ids"][0], got["distances"][0])]

    def embeddings(self, ids: list[str]) -> dict[str, list[float]]:
        if not ids:
            return {}
        got = self._vs.get(ids=ids, include=["embeddings"])
        return {cid: list(vec) for cid, vec in zip(got["ids"], got["embeddings"])}
