"""The gate never keeps on meaning alone unless it is strong: a chunk must hold some of the ask's word weight."""

from __future__ import annotations

import math

import numpy as np

from ragstream.gate.evidence import weigh_all
from ragstream.settings import default_settings
from ragstream.state import Chunk, Span

ASK = "How can the retry state be persisted in Redis so a Celery task keeps its attempt count after a restart?"


def _chunk(cid: str, text: str) -> Chunk:
    return Chunk(
        id=cid, source_path=f"{cid}.py", sha256="0" * 64, chunk_index=0, text=text, span=Span(start=0, end=len(text))
    )


def _at(cosine: float) -> list[float]:
    """A unit vector at this cosine to the ask's (the first axis)."""
    return [cosine, math.sqrt(1 - cosine**2), 0.0]


def test_a_chunk_without_the_asks_words_is_kept_only_on_strong_meaning() -> None:
    gate = default_settings().gate
    near = _chunk("params", "def __init__(self, sleep, stop, wait, before, after, reraise: bool = False): ...")
    strong = _chunk("strong", "class Retrying(BaseRetrying):\n    def __call__(self, fn, *args, **kwargs): ...")
    worded = _chunk("worded", "The attempt count lives on the call state: attempt_number, persisted nowhere.")
    vectors = np.asarray([_at(0.62), _at(gate.strong_evidence + 0.02), _at(0.45)], dtype=np.float32)
    found = weigh_all([ASK], [near, strong, worded], vectors, np.asarray([[1.0, 0.0, 0.0]], dtype=np.float32), gate)
    decisions = found.report.decisions
    assert decisions["params"].decision == "drop_irrelevant", decisions["params"].reason
    assert "word weight" in decisions["params"].reason and found.evidence["params"] >= gate.min_evidence
    assert decisions["strong"].decision == "keep", decisions["strong"].reason
    assert decisions["worded"].decision == "keep", decisions["worded"].reason


def test_a_hyphenated_term_weighs_as_the_term_it_names_not_as_its_last_word() -> None:
    """Split, "no-store" is "store" ("no" is a function word): the page on storing sessions held the ask's words as
    fully as the caching guide's `no-store` advice, which MDN's "Is it a good idea to put no-store on every page of
    our shop?" needed to pass the floor. Where the project holds the joined term, it weighs as one rare word."""
    gate = default_settings().gate
    guide = _chunk("guide", "Use `no-store` when a page must never be cached, such as a page with personal data.")
    sessions = _chunk("sessions", "Store the session on the server and send each page only its identifier.")
    vectors = np.asarray([_at(0.5), _at(0.5)], dtype=np.float32)
    rarity = {"store": 1.0, "no_stor": 3.0, "page": 0.5, "everi": 0.2, "shop": 2.0}
    ask = "Is it a good idea to put no-store on every page of our shop?"
    found = weigh_all([ask], [guide, sessions], vectors, np.asarray([[1.0, 0.0, 0.0]], dtype=np.float32), gate, rarity)
    assert found.evidence["guide"] > found.evidence["sessions"] + 0.1, found.report.decisions
    assert "no_stor" in found.report.decisions["guide"].reason
