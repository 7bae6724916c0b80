"""The A3 gate tokenizes its candidates in one call: a text's BM25 terms must not depend on its batch.

If they did, the gate's word evidence (and so what it keeps) would change with the other candidates.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from ragstream.gate.evidence import stemmed_terms
from ragstream.index.snapshot import bm25_tokens
from ragstream.settings import GateSettings, default_settings

piece = st.text(st.sampled_from(list("abcdefghij ABC_.-/\n!?0123")), max_size=12) | st.sampled_from(
    ["the ", "running ", "getUserName ", "x.py ", "HTTPServer "]
)
text = st.lists(piece, max_size=8).map("".join)


@hyp_settings(max_examples=60, deadline=None)
@given(st.lists(text, max_size=8))
def test_terms_of_a_text_do_not_depend_on_its_batch(texts: list[str]) -> None:
    assert bm25_tokens(texts) == [bm25_tokens([t])[0] for t in texts]


def test_function_words_are_not_terms_and_a_new_list_applies() -> None:
    gate = default_settings().gate

    def with_words(words: list[str]) -> GateSettings:
        return gate.model_copy(update={"function_words": words})

    assert stemmed_terms("the running server", with_words(["server"])) == {"run"}
    assert stemmed_terms("the running server", with_words(["running"])) == {"server"}


def test_words_marked_by_underscore_emphasis_are_their_words_and_identifiers_stay_whole() -> None:
    """ "_Boxes_ allow you to store data on the heap" held the term "_boxes_", so the ask "What is Box<T> for?"
    found no word of its own in the Rust book's answer, and every "_Black_" in Black's docs was no "black"."""
    gate = default_settings().gate
    assert {"box", "heap"} <= stemmed_terms("_Boxes_ allow you to store data on the heap", gate)
    assert stemmed_terms("the _tests_ directory of _Black_", gate) == {"test", "directori", "black"}
    assert stemmed_terms("_not simultaneous_ ones", gate) == stemmed_terms("not simultaneous ones", gate)
    assert bm25_tokens(["__init__ and snake_case_name and _private_name"])[0][:2] == ["__init__", "snake_case_nam"]
    assert "_private_nam" in bm25_tokens(["__init__ and snake_case_name and _private_name"])[0]
