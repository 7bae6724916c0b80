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


@lru_cache(maxsize=2)
def _cached(model_dir: Path, batch_size: int) -> Embedder:
    return Embedder(model_dir, batch_size)


def get_embedder(settings: EmbeddingSettings) -> Embedder:
    """The process-wide embedder for these settings (the model loads once)."""
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
