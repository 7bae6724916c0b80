"""The ONNX embedder: a graph built without torch that gives sentence-transformers' vectors, batching
that changes nothing, variants that stay close to fp32, and a build that is atomic and survives
concurrent first runs."""

from __future__ import annotations

import json
import re
import site
import subprocess
import sys
import venv
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from ragstream.embedding.bert_graph import IR_VERSION, OPSET, ORT_LOWER_BOUND, ORT_MAX_IR_VERSION
from ragstream.embedding.embedder import (
    SPREAD_MIN_TOKENS,
    MemoEmbedder,
    OnnxEmbedder,
    TorchEmbedder,
    backend_variant,
    get_embedder,
    query_embedder,
)
from ragstream.embedding.model_files import resolve_model_dir, weights_source
from ragstream.embedding.onnx_model import ensure_model, model_path
from ragstream.errors import ConfigError
from ragstream.settings import Settings
from ragstream.tokens.counters import HFTokenCounter, token_counter

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


def test_a_small_call_stays_on_the_loaded_session_and_gets_the_same_vectors(base_settings: Settings) -> None:
    """The per-core sessions cost a load each (a one-off `run` never repays it): they load for the first
    call large enough, and a text's vector is the same whichever session embeds it."""
    variant = backend_variant(base_settings.embedding.backend)
    path = ensure_model(weights_source(base_settings.embedding, variant), base_settings.models_dir, variant)
    onnx = OnnxEmbedder(resolve_model_dir(base_settings.embedding), path, 1, 256, threads=2)
    small = onnx.embed(SAMPLE)
    assert onnx._pool is None  # five texts, five batches: all on the one session
    many = SAMPLE * (SPREAD_MIN_TOKENS // 50)
    assert np.array_equal(onnx.embed(many)[: len(SAMPLE)], small)
    assert onnx._pool is not None
    assert np.array_equal(onnx.embed(SAMPLE), small)  # now spread over the per-core sessions


def test_the_embedder_and_the_token_counter_share_one_tokenizer(base_settings: Settings) -> None:
    """A run reads tokenizer.json once: the token counter counts with the embedder's tokenizer."""
    embedder = get_embedder(base_settings.embedding, base_settings.models_dir)
    counter = token_counter(base_settings.embedding)
    assert isinstance(embedder, OnnxEmbedder) and isinstance(counter, HFTokenCounter)
    assert embedder.tokenizer is counter._tok


def test_the_shared_tokenizer_cuts_and_counts_as_each_readers_own_did(base_settings: Settings) -> None:
    """The embedder's tokens are what a tokenizer truncating at its limit gives (so its vectors are), and the
    counter's counts what an untruncated one gives, well past that limit."""
    model_dir = resolve_model_dir(base_settings.embedding)
    variant = backend_variant(base_settings.embedding.backend)
    path = ensure_model(weights_source(base_settings.embedding, variant), base_settings.models_dir, variant)
    onnx = OnnxEmbedder(model_dir, path, 1, 256, threads=1)
    texts = [*SAMPLE, "overlong " * 400, ""]
    truncating, whole = (Tokenizer.from_file(str(model_dir / "tokenizer.json")) for _ in range(2))
    truncating.no_padding()
    truncating.enable_truncation(max_length=256)
    whole.no_padding()
    whole.no_truncation()
    mine, theirs = onnx.encode(texts), truncating.encode_batch(texts)
    assert [e.ids for e in mine] == [e.ids for e in theirs] and max(len(e.ids) for e in mine) == 256
    assert [e.type_ids for e in mine] == [e.type_ids for e in theirs]
    counter = token_counter(base_settings.embedding)
    counts = [counter.count(text) for text in texts]
    assert counts == [len(whole.encode(text, add_special_tokens=False).ids) for text in texts] and max(counts) == 800


@pytest.mark.slow  # two processes build the graph
def test_concurrent_first_exports_make_one_whole_model(base_settings: Settings, tmp_path: Path) -> None:
    models = tmp_path / "models"
    script = (
        "import sys; from pathlib import Path; from ragstream.embedding.onnx_model import ensure_model; "
        "from ragstream.embedding.model_files import weights_source; from ragstream.settings import load_settings; "
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


def _onnxruntime_lower_bound() -> str:
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'"onnxruntime>=([0-9.]+)"', pyproject)
    assert found, "pyproject.toml names no onnxruntime lower bound"
    return found.group(1)


def test_an_ir_14_model_in_a_users_models_folder_is_replaced_by_one_the_oldest_onnxruntime_loads(
    base_settings: Settings, tmp_path: Path
) -> None:
    """A models folder as an older ragstream left it: the default variant's file stamped IR 14 (onnx 1.23's own),
    which onnxruntime 1.19-1.30 refuse. The embedder builds and loads a file stamped for the package's lower bound."""
    import onnx

    assert _onnxruntime_lower_bound() == ORT_LOWER_BOUND
    assert IR_VERSION <= ORT_MAX_IR_VERSION[ORT_LOWER_BOUND] and OPSET == 17
    models = tmp_path / "models"
    models.mkdir()
    source = weights_source(base_settings.embedding, "w8-int8")
    current = ensure_model(source, base_settings.models_dir, "w8-int8")
    old = onnx.load(str(current))
    old.ir_version = 14
    old_name = model_path(source, models, "w8-int8").name.replace(f"-ir{IR_VERSION}", "")
    onnx.save(old, str(models / old_name))

    embedder = get_embedder(base_settings.embedding, models)
    assert embedder.embed(SAMPLE[:2]).shape == (2, 384)
    written = [f for f in models.glob("*.onnx") if f.name != old_name]
    assert [f.name for f in written] == [model_path(source, models, "w8-int8").name]
    stamped = onnx.load(str(written[0]), load_external_data=False)
    assert stamped.ir_version == IR_VERSION
    assert {(o.domain, o.version) for o in stamped.opset_import} == {("", OPSET), ("com.microsoft", 1)}


@pytest.mark.slow  # installs the lower bound's onnxruntime into a throwaway virtual environment
def test_the_written_models_run_on_the_oldest_onnxruntime_the_package_accepts(
    base_settings: Settings, tmp_path: Path
) -> None:
    """pyproject.toml's `onnxruntime>=X`, installed beside this environment's packages (its NumPy), loads both
    graphs ragstream writes and gives the vectors the installed onnxruntime gives."""
    bound = _onnxruntime_lower_bound()
    env = tmp_path / "oldest"
    venv.create(env, with_pip=True)
    installed = subprocess.run(
        [env / "bin" / "pip", "install", "--quiet", "--no-deps", f"onnxruntime=={bound}.*"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if installed.returncode != 0:
        pytest.skip(f"cannot install onnxruntime=={bound}.*: {installed.stderr.strip()[-300:]}")
    packages = next(env.glob("lib/python*/site-packages"))
    (packages / "this_environment.pth").write_text("\n".join(site.getsitepackages()) + "\n")  # after its own
    ids = [[101, 2129, 2024, 5491, 2128, 102]]
    script = (
        "import sys, json, numpy as np, onnxruntime as ort; ids = np.array(json.loads(sys.argv[2]), dtype=np.int64)\n"
        "s = ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider'])\n"
        "feed = {'input_ids': ids, 'attention_mask': np.ones_like(ids), 'token_type_ids': np.zeros_like(ids)}\n"
        "print(ort.__version__, json.dumps(s.run(None, feed)[0].tolist()))"
    )
    for variant in ("w8", "w8-int8"):
        path = ensure_model(weights_source(base_settings.embedding, variant), base_settings.models_dir, variant)
        oldest = subprocess.run(
            [env / "bin" / "python", "-c", script, str(path), str(ids)], capture_output=True, text=True, timeout=300
        )
        assert oldest.returncode == 0, oldest.stderr[-2000:]
        version, vector = oldest.stdout.split(" ", 1)
        assert version.startswith(bound + ".")
        here = subprocess.run([sys.executable, "-c", script, str(path), str(ids)], capture_output=True, text=True)
        assert np.allclose(np.array(json.loads(vector)), np.array(json.loads(here.stdout.split(" ", 1)[1])), atol=1e-4)
