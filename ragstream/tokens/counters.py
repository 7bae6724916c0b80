"""Offline token counters.

The embedder's own tokenizer (from the installed model folder) gives exact counts for the input
ceiling. A calibrated character estimate stands in wherever no tokenizer file is available.
tiktoken is never required: it downloads its encodings on first use.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path

from tokenizers import Tokenizer

from ragstream.embedding.model_files import model_tokenizer, resolve_model_dir
from ragstream.errors import ConfigError
from ragstream.settings import EmbeddingSettings

_WORD = re.compile(r"\S+")


class HFTokenCounter:
    """Counts with a Hugging Face `tokenizer.json` (no special tokens counted).

    WordPiece tokenizers never merge across whitespace, so a text's count is the sum of its
    words' counts; caching per word makes a 1 MB prompt cheap to cut.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tok = tokenizer  # the embedder's (`model_tokenizer`): it neither pads nor truncates
        self._word_count = lru_cache(maxsize=1 << 16)(self._count_word)

    def _count_word(self, word: str) -> int:
        return len(self._tok.encode(word, add_special_tokens=False).ids)

    def count(self, text: str) -> int:
        return sum(self._word_count(m.group()) for m in _WORD.finditer(text))

    def fitting_prefix(self, text: str, max_tokens: int) -> int:
        total = 0
        for match in _WORD.finditer(text):
            n = self._word_count(match.group())
            if total + n > max_tokens:
                if total:
                    return match.start()
                enc = self._tok.encode(match.group(), add_special_tokens=False)
                return match.start() + enc.offsets[max_tokens][0]
            total += n
        return len(text)


class CharEstimateCounter:
    """A conservative estimate (`chars_per_token` characters per token) for when no tokenizer is at hand."""

    def __init__(self, chars_per_token: float = 3.0) -> None:
        if chars_per_token <= 0:
            raise ConfigError("chars_per_token must be positive")
        self.chars_per_token = chars_per_token

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def fitting_prefix(self, text: str, max_tokens: int) -> int:
        return min(len(text), int(max_tokens * self.chars_per_token))


@lru_cache(maxsize=4)
def counter_for_model_dir(model_dir: Path) -> HFTokenCounter | CharEstimateCounter:
    """The model's own tokenizer when its folder has one, else the estimate."""
    if (model_dir / "tokenizer.json").is_file():
        return HFTokenCounter(model_tokenizer(model_dir))
    return CharEstimateCounter()


def token_counter(embedding: EmbeddingSettings) -> HFTokenCounter | CharEstimateCounter:
    """The embedder's own tokenizer; OpenAI embedding models are counted with a conservative estimate."""
    if embedding.provider == "openai":
        return CharEstimateCounter()
    return counter_for_model_dir(resolve_model_dir(embedding))
