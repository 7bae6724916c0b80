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
