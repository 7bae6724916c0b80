"""A preview is one line, never longer than asked, and never ends inside a word."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragstream.text.previews import ELLIPSIS, preview

WORDS = st.lists(st.text(alphabet="abcdé漢字-", min_size=1, max_size=12), min_size=1, max_size=40)


@given(words=WORDS, limit=st.integers(min_value=8, max_value=120), gap=st.sampled_from([" ", "\n", "  \t"]))
def test_a_preview_fits_and_ends_on_a_whole_word(words: list[str], limit: int, gap: str) -> None:
    text = gap.join(words)
    shown = preview(text, limit)
    flat = " ".join(words)
    assert len(shown) <= limit and "\n" not in shown
    if len(flat) <= limit:
        assert shown == flat
    else:
        assert shown.endswith(ELLIPSIS)
        kept = shown.removesuffix(ELLIPSIS).split(" ")
        assert kept[:-1] == words[: len(kept) - 1]
        assert kept[-1] == words[len(kept) - 1] or len(kept) == 1  # a single overlong word is cut, nothing else


def test_the_review_shows_chunk_previews_cut_at_a_word() -> None:
    assert preview("Chunks reach the final prompt when the gate keeps them", 30) == "Chunks reach the final …"
