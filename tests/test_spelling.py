"""An ask's misspelt words read as the corpus spells them (for the gate's evidence), and nothing else respelled."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from ragstream.text.spelling import MAX_LOOKUPS, Respeller, Vocabulary, edits

CORPUS = """Validators run on every attribute of the class. A converter changes the value before validators see it.
Set frozen=True to make instances immutable after they are created. The attribute's validator gets the instance,
the attribute and the value. Validation runs on every instance the class creates, attributes validated in order."""


def _never(word: str) -> bool:
    return False


def test_a_misspelt_word_reads_as_the_corpus_spells_it_and_the_rest_stays_as_written() -> None:
    vocabulary = Vocabulary.of(CORPUS)
    asked = "hw do i make an atribute imutable after the instanse is created? Does a convertor run on evry one?"
    assert Respeller(vocabulary, _never)(asked) == (
        "hw do i make an attribute immutable after the instance is created? Does a converter run on evry one?"
    ), "words under five letters stay: one edit from a real word is too often another real word"


def test_names_identifiers_english_words_and_known_words_are_never_respelled() -> None:
    vocabulary = Vocabulary.of(CORPUS)
    asked = "Can a Validater in Celery or a validater_fn or an attributes2 field see the vallue? It comes first."
    assert Respeller(vocabulary, _never)(asked) == asked.replace("vallue", "value")
    assert Respeller(vocabulary, lambda word: word == "vallue")("the vallue") == "the vallue"


def test_a_word_a_prefix_makes_of_a_real_word_is_never_respelled_into_its_opposite() -> None:
    """ "unencrypted" is two edits from "encrypted" and "unsalted" from "unwanted": read as them, an ask about
    unencrypted backups searched and was judged as one about encrypted backups. A prefix and a word the corpus or
    English holds make a real word; a misspelling that happens to open like a prefix is still respelled."""
    vocabulary = Vocabulary.of("Backups are encrypted. Passwords are salted. Unwanted requests are dropped.")
    asked = "Are unencrypted backups or unsalted passwords ever kept? Are reqeusts logged?"
    assert Respeller(vocabulary, _never)(asked) == asked.replace("reqeusts", "requests")


def test_the_most_used_of_the_nearest_words_is_taken() -> None:
    vocabulary = Vocabulary.of("instance " * 3 + "instants")
    assert Respeller(vocabulary, _never)("one instanse") == "one instance"
    assert Respeller(Vocabulary.of("validators validator validator"), _never)("the validatorz") == "the validator"


def _distance(a: str, b: str) -> int:
    """The optimal string alignment distance, unbounded (a plain reference for `edits`)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


@hyp_settings(max_examples=300, deadline=None)
@given(st.text("abcde", max_size=9), st.text("abcde", max_size=9), st.integers(0, 3))
def test_bounded_edits_agree_with_the_full_distance_up_to_the_bound(a: str, b: str, limit: int) -> None:
    assert edits(a, b, limit) == min(_distance(a, b), limit + 1)


def test_a_pasted_block_stays_as_written_and_a_long_paste_costs_a_bounded_number_of_lookups() -> None:
    vocabulary = Vocabulary.of(CORPUS)
    asked = "Why is the atribute lost?\n\n```\nvalidater failed: atribute x\n```\n\nThe instanse is new."
    assert Respeller(vocabulary, _never)(asked) == asked.replace("Why is the atribute", "Why is the attribute").replace(
        "The instanse", "The instance"
    )
    looked: list[str] = []

    def counted(word: str) -> bool:
        looked.append(word)
        return False

    noise = " ".join(f"zqx{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i // 676 % 26)}w" for i in range(5000))
    assert Respeller(vocabulary, counted)(noise) == noise
    assert len(looked) == MAX_LOOKUPS


def test_chat_shorthand_reads_as_the_words_it_stands_for_and_names_nothing_absent() -> None:
    """ "hw do i exit my typer app ... ?? i dont want a traceback": "hw" is in no document and no English word, so the
    gate took it for a name the documents lack and said "The documents do not cover: hw do i exit my typer app ...",
    beside pages that answer. The configured shorthand (`gate.shorthand`) reads as what it stands for; the ask is then
    at most unanswered by the excerpts, never shown absent from the documents."""
    from ragstream.gate.coverage import names_nothing_absent
    from ragstream.gate.evidence import stemmed_terms
    from ragstream.settings import load_settings

    gate = load_settings().gate
    asked = "hw do i exit my typer app with a non zero exit code?? i dont want a traceback"
    read = Respeller(Vocabulary.of("Exit the app with a code. The traceback is hidden."), _never, gate.shorthand)(asked)
    assert read == "how do i exit my typer app with a non zero exit code?? i don't want a traceback"
    absent = {"hw", "dont"} & stemmed_terms(asked, gate)
    assert not names_nothing_absent(asked, gate, absent) and names_nothing_absent(read, gate, absent)
