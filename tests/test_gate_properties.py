"""The offline gate's keep order, whatever the evidence (property test over random candidates and vectors).

Chunks kept on their own evidence come first in the order they came in; beside-the-kept neighbours and, for an ask
the documents treat, the unsure band follow; nothing under `gate.weak_evidence`, under the cosine floor or short of
the ask's words is kept for the band, and with nothing kept on its own nothing is kept at all.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from ragstream.gate.evidence import weigh_all
from ragstream.gate.neighbours import keep_adjacent, keep_unsure
from ragstream.settings import load_settings
from ragstream.state import Chunk, Span

GATE = load_settings(overrides={"llm.provider": "local"}).gate
WORDS = ["retry", "exit", "traceback", "cache", "header", "token", "validator", "worker"]


def _chunk(i: int, words: list[str]) -> Chunk:
    text = " ".join(words) + "."
    name = f"f{i % 3}.md"
    return Chunk(
        id=f"{name}@0#{i}",
        source_path=name,
        sha256="0" * 64,
        chunk_index=i,
        text=text,
        span=Span(start=0, end=len(text)),
    )


candidates_st = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
        st.one_of(st.floats(-1.0, 1.0), st.floats(0.3, 0.55)),  # cosines near the band, often
    ),
    min_size=1,
    max_size=8,
)


@hyp_settings(max_examples=150, deadline=None)
@given(candidates_st, st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.booleans())
def test_the_gate_keeps_the_sure_first_and_the_band_only_beside_them(
    drawn: list[tuple[list[str], float]], asked: list[str], treated: bool
) -> None:
    candidates = [_chunk(i, words) for i, (words, _) in enumerate(drawn)]
    ask = np.asarray([1.0, 0.0], dtype=np.float32)
    vectors = np.asarray([[c, np.sqrt(1 - c * c)] for _, c in drawn], dtype=np.float32).reshape(len(drawn), 2)
    weighed = weigh_all([f"How do I {' '.join(asked)}?"], candidates, vectors, ask[None, :], GATE)
    sure = list(weighed.kept)
    found = keep_unsure(keep_adjacent(weighed, candidates, GATE), candidates, GATE, treated)
    order = [c.id for c in candidates]
    assert found.kept[: len(sure)] == sure == sorted(sure, key=order.index)
    assert len(set(found.kept)) == len(found.kept)
    band = set(found.report.unsure)
    assert band <= set(found.kept) - set(sure)
    if not sure or not treated:
        assert not band
    for cid in band:
        assert cid in weighed.short and GATE.weak_evidence <= weighed.evidence[cid] < GATE.min_evidence
        assert weighed.cosine[cid] >= GATE.min_similarity
    assert found.kept[len(found.kept) - len(band) :] == [cid for cid in order if cid in band]
    kept = {cid for cid, d in found.report.decisions.items() if d.decision == "keep"}
    assert kept == set(found.kept) and sum(found.report.counts.values()) == len(candidates)
