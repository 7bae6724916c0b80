"""ContextBudget: token counting and trimming against per-stage ceilings from config.

Counts are model-aware when tiktoken's encoding file is already on this machine (tiktoken would
otherwise download it on first use); else the embedding model's own tokenizer, scaled by a
calibration factor, gives the estimate. Every trim records what it removed and why.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from ragstream.model_files import resolve_model_dir
from ragstream.settings import Settings
from ragstream.tokens import counter_for_model_dir

T = TypeVar("T")

_TIKTOKEN_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


def _tiktoken_cache_file(encoding: str) -> Path | None:
    url = _TIKTOKEN_URLS.get(encoding)
    if url is None:
        return None
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") or str(
        Path(tempfile.gettempdir()) / "data-gym-cache"
    )
    path = Path(cache) / hashlib.sha1(url.encode()).hexdigest()
    return path if path.is_file() else None


@lru_cache(maxsize=4)
def _tiktoken_count(encoding: str) -> Callable[[str], int] | None:
    """A tiktoken counter, only when its encoding needs no download."""
    if _tiktoken_cache_file(encoding) is None:
        return None
    import tiktoken

    enc = tiktoken.get_encoding(encoding)
    return lambda text: len(enc.encode(text, disallowed_special=()))


@dataclass
class TrimReport:
    ceiling: int
    used: int
    kept: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"ceiling": self.ceiling, "used": self.used, "kept": self.kept, "removed": self.removed}


class ContextBudget:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ceilings = settings.budget.ceilings
        exact = _tiktoken_count(settings.budget.tiktoken_encoding)
        if exact is not None:
            self.method = f"tiktoken:{settings.budget.tiktoken_encoding}"
            self._count = exact
        else:
            counter = counter_for_model_dir(resolve_model_dir(settings.embedding.model_copy(update={"provider": "local", "model": "all-MiniLM-L6-v2", "model_path": None})))
            factor = settings.budget.estimate_factor
            self.method = f"estimate:{type(counter).__name__}x{factor:g}"
            self._count = lambda text: int(round(counter.count(text) * factor))

    def count(self, text: str) -> int:
        return self._count(text)

    def ceiling(self, stage: str) -> int:
        return self.ceilings[stage]

    def fit(
        self, stage: str, items: Sequence[T], key: Callable[[T], str], text: Callable[[T], str], reserve: int = 0,
        ceiling: int | None = None,
    ) -> tuple[list[T], TrimReport]:
        """Keep items in order while they fit under the stage's ceiling (or `ceiling`) minus `reserve`.

        Items are in priority order (best first), so what is dropped is always the lowest-ranked.
        """
        ceiling = ceiling or self.ceiling(stage)
        report = TrimReport(ceiling=ceiling, used=reserve)
        kept: list[T] = []
        for item in items:
            cost = self.count(text(item))
            if report.used + cost <= ceiling:
                kept.append(item)
                report.used += cost
                report.kept.append(key(item))
            else:
                report.removed.append(key(item))
        return kept, report
