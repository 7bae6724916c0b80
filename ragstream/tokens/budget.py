"""ContextBudget: token counting and trimming against per-stage ceilings from config.

Counts are exact for the model that reads the final prompt when it is an OpenAI model and tiktoken's
encoding file for it is already on this machine (tiktoken would otherwise download it on first use;
`TIKTOKEN_CACHE_DIR` points at a folder holding it); else another cached encoding or the embedding
model's own tokenizer, scaled by a calibration factor, gives an estimate, labelled as one. Every trim
records what it removed and why.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TypedDict, TypeVar

from ragstream.embedding.model_files import resolve_model_dir
from ragstream.settings import Settings
from ragstream.tokens.counters import HFTokenCounter, counter_for_model_dir

T = TypeVar("T")

_TIKTOKEN_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


def _tiktoken_cache_file(encoding: str) -> Path | None:
    url = _TIKTOKEN_URLS.get(encoding)
    if url is None:
        return None
    cache = (
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or str(Path(tempfile.gettempdir()) / "data-gym-cache")
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


class TrimCounts(TypedDict):
    """A trim as the fields of the stage reports' `BudgetReport`."""

    ceiling: int
    used: int
    kept: list[str]
    removed: list[str]


@dataclass
class TrimReport:
    ceiling: int
    used: int
    kept: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def as_dict(self) -> TrimCounts:
        return {"ceiling": self.ceiling, "used": self.used, "kept": self.kept, "removed": self.removed}


def _model_encoding(model: str) -> str | None:
    """tiktoken's encoding for an OpenAI model name (a table lookup, no download); None for other models."""
    from tiktoken.model import encoding_name_for_model

    base = model.split(":")[1] if model.startswith("ft:") and ":" in model else model
    try:
        return encoding_name_for_model(base)
    except KeyError:
        return None


class ContextBudget:
    """Counts tokens and says what the count is: `tokenizer` names what counted, `exact` says whether it
    is the tokenizer of `model` (the one that reads the final prompt, `send.model`), and `label` says
    both in words. tiktoken counts exactly for an OpenAI model when that model's encoding file is on
    this machine; any other count is an estimate and is called one."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ceilings = settings.budget.ceilings
        self.model = settings.send.model
        wanted = _model_encoding(self.model)
        encoding = (
            wanted if wanted is not None and _tiktoken_count(wanted) is not None else settings.budget.tiktoken_encoding
        )
        exact = _tiktoken_count(encoding)
        if exact is not None:
            self.method = f"tiktoken:{encoding}"
            self.tokenizer = f"tiktoken {encoding}"
            self.exact = encoding == wanted
            self._count = exact
        else:
            counter = counter_for_model_dir(
                resolve_model_dir(
                    settings.embedding.model_copy(
                        update={"provider": "local", "model": "all-MiniLM-L6-v2", "model_path": None}
                    )
                )
            )
            factor = settings.budget.estimate_factor
            self.method = f"estimate:{type(counter).__name__}x{factor:g}"
            self.tokenizer = (
                f"MiniLM WordPiece x{factor:g}"
                if isinstance(counter, HFTokenCounter)
                else f"{counter.chars_per_token:g} characters per token"
            )
            self.exact = False
            self._count = lambda text: int(round(counter.count(text) * factor))
        if self.exact:
            self.label = f"exact for {self.model} ({self.tokenizer})"
        elif wanted is None:
            self.label = f"estimate ({self.tokenizer}): {self.model} is not a model whose tokenizer is on this machine"
        else:
            self.label = (
                f"estimate ({self.tokenizer}): {self.model}'s encoding {wanted} is not on this machine "
                "(tiktoken would download it)"
            )

    def count(self, text: str) -> int:
        return self._count(text)

    def ceiling(self, stage: str) -> int:
        return self.ceilings[stage]

    def fit(
        self,
        stage: str,
        items: Sequence[T],
        key: Callable[[T], str],
        text: Callable[[T], str],
        reserve: int = 0,
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
