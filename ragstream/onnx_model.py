"""The MiniLM model as an ONNX graph: exported once from the installed weights, cached, reused.

The export runs the model through torch (the one time torch is needed), fuses attention, layer norm
and GELU with onnxruntime's transformer optimizer, and, for the `onnx-int8` backend, quantizes the
weights per channel. The graph includes mean pooling and L2 normalization, so it outputs exactly
what sentence-transformers does for this model. Files are keyed by the weights' sha256 and written
atomically under a lock, so concurrent first runs export once and readers never see half a file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from ragstream.atomic import write_atomic
from ragstream.errors import ConfigError

log = logging.getLogger("ragstream.onnx")
Variant = Literal["fp32", "int8"]
WEIGHTS = "model.safetensors"
OPSET = 17


def weights_sha256(model_dir: Path, models_dir: Path) -> str:
    """sha256 of the model's weights, re-hashed only when the file's size or mtime changed."""
    weights = model_dir / WEIGHTS
    try:
        stat = weights.stat()
    except OSError as exc:
        raise ConfigError(f"the embedding model has no {WEIGHTS} in {model_dir}") from exc
    record = models_dir / "weights-sha256.json"
    key = f"{weights.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    try:
        known = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(key), str):
        return known[key]
    digest = hashlib.sha256()
    with weights.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    write_atomic(record, json.dumps({key: digest.hexdigest()}))
    return digest.hexdigest()


def model_path(model_dir: Path, models_dir: Path, variant: Variant) -> Path:
    return models_dir / f"minilm-{weights_sha256(model_dir, models_dir)[:16]}-{variant}.onnx"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_model(model_dir: Path, models_dir: Path, variant: Variant) -> Path:
    """The cached ONNX model for these weights, exported first when missing."""
    target = model_path(model_dir, models_dir, variant)
    if target.is_file():
        return target
    with _locked(target):
        if not target.is_file():  # another process may have exported while this one waited
            export(model_dir, target, variant)
    return target


def export(model_dir: Path, target: Path, variant: Variant) -> None:
    """Export, optimize (and quantize), then move into place in one rename."""
    log.info("exporting the embedding model to %s (once; it is cached)", target)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as work:
        raw, optimized = Path(work) / "raw.onnx", Path(work) / "optimized.onnx"
        _export_with_torch(model_dir, raw)
        _optimize(raw, optimized, model_dir)
        final = optimized
        if variant == "int8":
            final = Path(work) / "int8.onnx"
            _quantize(optimized, final)
        os.replace(final, target)


def _export_with_torch(model_dir: Path, out: Path) -> None:
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ConfigError(f"exporting the embedding model needs torch and transformers: {exc}") from exc

    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager", local_files_only=True)
    model.eval()

    class SentenceEmbedding(torch.nn.Module):
        """The transformer, mean pooling over real tokens, and L2 normalization."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
        ) -> torch.Tensor:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    sample = torch.ones((2, 8), dtype=torch.long)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer notes about shapes that are constant for this model
        torch.onnx.export(
            SentenceEmbedding(),
            (sample, sample, torch.zeros_like(sample)),
            str(out),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "token_type_ids": {0: "batch", 1: "tokens"},
                "embedding": {0: "batch"},
            },
            opset_version=OPSET,
            dynamo=False,
        )


def _optimize(raw: Path, out: Path, model_dir: Path) -> None:
    """Fuse attention, skip layer norm and GELU (onnxruntime's BERT optimizer)."""
    from onnxruntime.transformers import optimizer

    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    fused = optimizer.optimize_model(
        str(raw),
        model_type="bert",
        num_heads=config["num_attention_heads"],
        hidden_size=config["hidden_size"],
        opt_level=1,
    )
    fused.save_model_to_file(str(out))


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
