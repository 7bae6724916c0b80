"""The ONNX embedder: a graph built without torch that gives sentence-transformers' vectors, batching
that changes nothing, variants that stay close to fp32, and a build that is atomic and survives
concurrent first runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragstream.embedding import MemoEmbedder, OnnxEmbedder, TorchEmbedder, get_embedder, query_embedder
from ragstream.errors import ConfigError
from ragstream.model_files import resolve_model_dir, weights_source
from ragstream.onnx_model import ensure_model
from ragstream.settings import Settings

SAMPLE = [
    "How are documents re-embedded when they change?",
    "ok",
    "Retrieval fuses dense vectors and BM25 with reciprocal-rank fusion; the ladder lowers the floor. " * 12,
    "名前とは何ですか — unicode, emoji 🚀 and code: def f(x): return x**2",
    "The Prompt Builder fences every excerpt with its source path, chunk id and span.",
]


@pytest.mark.slow  # loads torch
def test_onnx_matches_sentence_transformers(base_settings: Settings) -> None:
    fp32 = get_embedder(base_settings.embedding.model_copy(update={"backend": "onnx"}), base_settings.models_dir)
    assert isinstance(fp32, OnnxEmbedder)
    torch = TorchEmbedder(weights_source(base_settings.embedding, "fp32").weights.parent, batch_size=4)
    cosine = np.sum(fp32.embed(SAMPLE) * torch.embed(SAMPLE), axis=1)
    assert cosine.min() >= 0.9999


def test_every_variant_stays_close_to_fp32(base_settings: Settings) -> None:
    """int8 weights (packaged) and int8 activations (dynamic) each move a vector a little; the
    default was chosen on SciFact nDCG@10 (bench/retrieval_eval.py --backends)."""
    assert base_settings.embedding.backend == "onnx-w8-int8"
    fp32 = get_embedder(base_settings.embedding.model_copy(update={"backend": "onnx"}), base_settings.models_dir)
    reference = fp32.embed(SAMPLE)
    for backend, least, mean in (("onnx-w8", 0.99, 0.998), ("onnx-int8", 0.95, 0.98), ("onnx-w8-int8", 0.95, 0.98)):
        other = get_embedder(base_settings.embedding.model_copy(update={"backend": backend}), base_settings.models_dir)
        cosine = np.sum(other.embed(SAMPLE) * reference, axis=1)
        assert cosine.min() >= least and cosine.mean() >= mean and cosine.max() < 1 - 1e-6, (backend, cosine)


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8", "onnx-w8", "onnx-w8-int8"])
class Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner, self.texts = inner, 0
        self.dimension = inner.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.inner.embed(texts)


def test_the_query_memo_gives_the_embedders_vectors_and_forgets_the_oldest(base_settings: Settings) -> None:
    real = get_embedder(base_settings.embedding, base_settings.models_dir)
    counting = Counting(real)
    memo = MemoEmbedder(counting, entries=3)
    first = memo.embed(SAMPLE[:2])
    again = memo.embed([SAMPLE[1], SAMPLE[0], SAMPLE[1]])
    assert counting.texts == 2  # the repeat embedded nothing
    assert np.array_equal(again, first[[1, 0, 1]])
    assert np.allclose(again, real.embed([SAMPLE[1], SAMPLE[0], SAMPLE[1]]), atol=1e-6)
    assert np.array_equal(memo.embed_together(SAMPLE[:2]), first)
    memo.embed(SAMPLE[2:])  # three new texts: the two old ones are forgotten
    assert counting.texts == 5
    memo.embed([SAMPLE[0]])
    assert counting.texts == 6
    assert memo.embed([]).shape == (0, real.dimension)
    assert isinstance(query_embedder(base_settings.embedding, base_settings.models_dir), MemoEmbedder)


@pytest.mark.slow  # two processes build the graph
def test_concurrent_first_exports_make_one_whole_model(base_settings: Settings, tmp_path: Path) -> None:
    models = tmp_path / "models"
    script = (
        "import sys; from pathlib import Path; from ragstream.onnx_model import ensure_model; "
        "from ragstream.model_files import weights_source; from ragstream.settings import load_settings; "
        "s = load_settings(); print(ensure_model(weights_source(s.embedding, 'fp32'), Path(sys.argv[1]), 'fp32'))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(models)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=600)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outputs[0] == outputs[1]
    assert sorted(f.name for f in models.iterdir() if f.suffix == ".onnx") == [Path(outputs[0]).name]
    assert not [f for f in models.iterdir() if f.name.startswith(".export-")]
    onnx = OnnxEmbedder(resolve_model_dir(base_settings.embedding), Path(outputs[0]), 8, 256, 1)
    reference = get_embedder(base_settings.embedding.model_copy(update={"backend": "onnx"}), base_settings.models_dir)
    assert np.allclose(onnx.embed(SAMPLE), reference.embed(SAMPLE), atol=1e-5)


def test_the_cached_graph_is_keyed_by_the_weights(base_settings: Settings) -> None:
    fp32, w8 = weights_source(base_settings.embedding, "fp32"), weights_source(base_settings.embedding, "w8")
    path = ensure_model(fp32, base_settings.models_dir, "fp32")
    assert path.is_file() and path.name.startswith("minilm-") and "-fp32-" in path.name
    assert ensure_model(fp32, base_settings.models_dir, "fp32") == path
    packaged = ensure_model(w8, base_settings.models_dir, "w8")
    assert packaged.name.split("-")[1] != path.name.split("-")[1]  # other weights, another file


def test_weights_that_are_not_the_published_file_are_refused(base_settings: Settings, tmp_path: Path) -> None:
    source = weights_source(base_settings.embedding, "w8")
    forged = tmp_path / "model.onnx"
    forged.write_bytes(source.weights.read_bytes()[:-1] + b"\0")
    with pytest.raises(ConfigError, match="not the published file"):
        ensure_model(type(source)(forged, source.config_file, source.expected_sha256), tmp_path / "models", "w8")
    assert not (tmp_path / "models").exists() or not list((tmp_path / "models").glob("*.onnx"))
