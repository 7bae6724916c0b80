"""What an LLM call cost in USD, from the configured price table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragstream.text.dates import SNAPSHOT_SUFFIX

if TYPE_CHECKING:
    from ragstream.settings import Prices


def price_key(prices: Prices, model: str) -> str | None:
    """The price-table entry for a model the server reports: the name itself, a fine-tune's base model,
    or a dated snapshot's model (`gpt-4.1-mini-2025-04-14`). None: not priced (a local server's model)."""
    base = model.split(":")[1] if model.startswith("ft:") and ":" in model else model
    for name in (model, base, SNAPSHOT_SUFFIX.sub("", base)):
        if name in prices:
            return name
    return None


def cost_estimate(prices: Prices, model: str, tokens_in: int, tokens_out: int) -> float | None:
    """USD from the price table (per 1M tokens) for the model the server reported; None when unpriced."""
    key = price_key(prices, model)
    if key is None:
        return None
    price = prices[key]
    return round(tokens_in * price["input"] / 1e6 + tokens_out * price["output"] / 1e6, 8)
