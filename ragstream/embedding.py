"""Sentence embeddings from the installed MiniLM model, loaded once per process, never downloaded."""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from ragstream.errors import ConfigError
from ragstream.model_files import resolve_model_dir
from ragstream.settings import EmbeddingSettings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class Embedder:
    """Normalized embeddings (cosine = dot product), batched, thread-safe."""

    def __init__(self, model_dir: Path, batch_size: int = 64) -> None:
        from sentence_transformers import SentenceTransformer

        try:
            self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        except Exception as exc:  # sentence-transformers raises many kinds; all mean "cannot load"
            raise ConfigError(f"cannot load the embedding model from {model_dir}: {exc}") from exc
        self.model_dir = model_dir
        self.batch_size = batch_size
        self.dimension = int(self._model.get_embedding_dimension() or 0)
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)


class OpenAIEmbedder:
    """OpenAI (or compatible) embeddings through langchain-openai, normalized like the local ones."""

    def __init__(self, model: str, api_key: str | None, base_url: str | None, batch_size: int) -> None:
        from langchain_openai import OpenAIEmbeddings

        self._client = OpenAIEmbeddings(
            model=model, api_key=api_key or "not-needed", base_url=base_url, chunk_size=batch_size,
            check_embedding_ctx_length=False, max_retries=2,
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = np.asarray(self._client.embed_documents(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)


@lru_cache(maxsize=2)
def _cached(model_dir: Path, batch_size: int) -> Embedder:
    return Embedder(model_dir, batch_size)


@lru_cache(maxsize=2)
def _cached_openai(model: str, api_key: str | None, base_url: str | None, batch_size: int) -> OpenAIEmbedder:
    return OpenAIEmbedder(model, api_key, base_url, batch_size)


def get_embedder(settings: EmbeddingSettings) -> Embedder | OpenAIEmbedder:
    """The process-wide embedder for these settings (the model loads once)."""
    if settings.provider == "openai":
        key = settings.api_key.get_secret_value() if settings.api_key else None
        return _cached_openai(settings.model, key, settings.base_url, settings.batch_size)
    return _cached(resolve_model_dir(settings), settings.batch_size)


class LangChainEmbeddings:
    """Our embedder behind LangChain's `Embeddings` interface, for langchain-chroma.

    Chroma never gets an embedding function of its own: its default would download a model.
    The model loads on the first embedding, so opening a store to read or delete costs nothing.
    """

    def __init__(self, settings: EmbeddingSettings) -> None:
        self.settings = settings

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return get_embedder(self.settings).embed(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return get_embedder(self.settings).embed([text])[0].tolist()
