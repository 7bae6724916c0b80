"""A condensed line never says what the next sentence of its document qualifies ("However, ...", "But ...") or goes
on with ("... ``` where `my-registry` is ..."): over generated paragraphs of statements, some qualified or continued,
every extracted line that ends where such a sentence follows carries that sentence with it."""

from __future__ import annotations

import hashlib
import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.condensing.extractive import condense_extractively, qualifies
from ragstream.settings import load_settings
from tests.helpers import one_chunk

CONDENSER = load_settings(overrides={"llm.provider": "local"}).condenser.model_copy(
    update={"min_relevance": -1.0, "max_lines": 100}
)
SUBJECTS = ["The store flag", "Every cached page", "The proxy", "A signed cookie", "The retry budget"]
CLAIMS = ["keeps pages out of caches", "is checked on every request", "expires after one day", "travels over HTTPS"]
OPENERS = ["However, ", "But ", "Yet ", "Nevertheless, ", "where ", "with ", ""]


def _embed(texts: list[str]) -> np.ndarray:
    """Distinct unit vectors, one per text, the same for the same text: no line repeats another by meaning."""
    out = []
    for text in texts:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        vector = np.random.default_rng(seed).normal(size=16)
        out.append(vector / np.linalg.norm(vector))
    return np.asarray(out)


sentence = st.tuples(st.sampled_from(OPENERS), st.sampled_from(SUBJECTS), st.sampled_from(CLAIMS))


BLOCK = "```http\nCache-Control: no-store\n```"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(sentence, min_size=1, max_size=4), st.booleans()), min_size=1, max_size=3))
def test_no_line_ends_where_a_qualifying_sentence_follows(
    paragraphs: list[tuple[list[tuple[str, str, str]], bool]],
) -> None:
    """A paragraph may end in a short code block, which its last sentence introduces: "However, a `no-cache`
    directive will force ... ```http Cache-Control: no-cache```" leans on the paragraph before it all the same."""
    written = []
    for k, (paragraph, block) in enumerate(paragraphs):
        said = []
        for i, (opener, subject, claim) in enumerate(paragraph):
            subject = subject if not opener else subject[0].lower() + subject[1:]
            said.append(f"{opener}{subject} {claim} (rule {k}.{i}).")
        written.append(" ".join(said) + (f"\n\n{BLOCK}" if block else ""))
    text = "# Rules\n\n" + "\n\n".join(written) + "\n"
    ask = ["Which rules hold for cached pages and cookies?"]
    lines = condense_extractively(ask, [one_chunk("rules.md", text)], _embed, CONDENSER, ask)
    flat = " ".join(text.split())
    for line in lines:
        said = " ".join(line.text.split())
        at = flat.find(said)
        assert at >= 0, (said, flat)
        after = flat[at + len(said) :].removeprefix(" ".join(BLOCK.split())).lstrip()
        following = re.split(r"(?<=\.)\s", after, maxsplit=1)[0]
        leaning = qualifies(following, CONDENSER) or following[:1].islower()  # "where ...": the rest of a sentence
        assert not (following and leaning), (line.text, following)
