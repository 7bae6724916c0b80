"""The shared formats (ragstream/text/): what one module builds, the same module reads back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstream.errors import InputError
from ragstream.text.asking import ask_of, asking_sentences, asks
from ragstream.text.chunk_ids import chunk_id, citations, is_chunk_id, parse, source_of, turn_id, uncite
from ragstream.text.dates import first_day, timestamp, years_of_dates
from ragstream.text.markup import shown_text
from ragstream.text.phrases import any_phrase, phrase
from ragstream.text.sentences import EXCERPT, MARKDOWN, TYPED, WRAPPED, SentenceRule, spans, split

_SOURCES = st.text(st.characters(blacklist_characters="[]\n", blacklist_categories=("Cs",)), min_size=1, max_size=40)


@given(_SOURCES, st.text("0123456789abcdef", min_size=10, max_size=64), st.integers(0, 10**6))
def test_a_built_chunk_id_parses_back_and_is_cited_whole(source: str, sha: str, index: int) -> None:
    cid = chunk_id(source, sha, index)
    parts = parse(cid)
    assert (parts.source, parts.sha, parts.index, parts.turn) == (source, sha[:10], index, False)
    assert citations(f"- a fact [{cid}] and more") == [cid]


def test_turn_ids_and_file_names_with_spaces_are_citations_too() -> None:
    turn = turn_id("memory/sample", 3)
    spaced = chunk_id("my notes/plan v2.md", "0123456789abcdef", 0)
    line = f"- both [{turn}] [{spaced}] [not an id] [see a@b#1]"
    assert citations(line) == [turn, spaced]
    assert parse(turn).turn and source_of(spaced) == "my notes/plan v2.md"
    assert uncite(line, {spaced}) == f"- both [{turn}] [not an id] [see a@b#1]"


@pytest.mark.parametrize("value", ["", "a.md", "a.md@0123#1", "a[1].md@0123456789#1", "x#turn"])
def test_what_is_not_a_chunk_id_says_so(value: str) -> None:
    assert not is_chunk_id(value)
    with pytest.raises(InputError):
        parse(value)


def test_a_document_is_dated_by_a_day_a_query_by_a_day_or_a_month() -> None:
    assert first_day("released 2024-05 then 2024-05-13x and 2023-02-30", "notes/2022-01-02.md") == "2023-02-30"
    assert first_day("no date", "notes/2022-01-02.md") == "2022-01-02"
    assert years_of_dates("since 2021-03, before 1899-01-01, by 2024-12-31") == {2021, 2024}
    assert timestamp("2023-02-30") is None and timestamp("1970-01-02") == 86400.0


_DOC = '# Title\nThe index is rebuilt\nnightly. It keeps "old copies." Then:\n- one item\n\nversion 2. Done'


def test_each_sentence_rule_ends_sentences_where_its_text_does() -> None:
    assert split("Explain the gate\nand list its rules. Why? ok", TYPED) == [
        "Explain the gate",
        "and list its rules.",
        "Why?",
        "ok",
    ]
    assert split(_DOC, WRAPPED) == [  # lines joined, heading dropped; a quote after the stop hides it
        "The index is rebuilt nightly.",
        'It keeps "old copies." Then: - one item',
        "version 2.",
        "Done",
    ]
    assert [_DOC[a:b].strip() for a, b in spans(_DOC, MARKDOWN)] == [  # a list item and a blank line break too
        "# Title\nThe index is rebuilt\nnightly.",
        'It keeps "old copies."',  # the quote that closes it stays with it
        "Then:",
        "- one item",
        "version 2.",
        "Done",
    ]
    starts = [a for a, _ in spans(_DOC, EXCERPT)]
    assert [_DOC[s : s + 8] for s in starts] == ["# Title\n", "It keeps", "Then:\n- ", "Done"]
    with pytest.raises(ValueError):
        spans(_DOC, WRAPPED)


@pytest.mark.parametrize("rule", [TYPED, MARKDOWN])
def test_an_abbreviation_inside_a_sentence_ends_no_sentence(rule: SentenceRule) -> None:
    """ "(e.g. GitHub, Bitbucket, etc), the branch, ..." cut after "e.g." gave two lines that each said half, one
    ending on "(e.g." and one opening mid-sentence, and a prompt's ask was cut the same way; httpx's docs gave
    "... a bundle of SSL certificates (a.k.a." and "CA bundle) delivered by ..." as two Facts."""
    text = (
        "The path depends on the host (e.g. GitHub, Bitbucket, etc), the branch, and the docs directory. Only"
        " published versions are supported (i.e. what PyPI has). Compare cf. the notes. Pick A vs. B. It uses a"
        " bundle of certificates (a.k.a. CA bundle) from a CA. Load it from a directory (ie. you ran `c_rehash`)"
        " then. As Smith et al. found, it costs approx. 5 ms. Done."
    )
    assert split(text, rule) == [
        "The path depends on the host (e.g. GitHub, Bitbucket, etc), the branch, and the docs directory.",
        "Only published versions are supported (i.e. what PyPI has).",
        "Compare cf. the notes.",
        "Pick A vs. B.",
        "It uses a bundle of certificates (a.k.a. CA bundle) from a CA.",
        "Load it from a directory (ie. you ran `c_rehash`) then.",
        "As Smith et al. found, it costs approx. 5 ms.",
        "Done.",
    ]
    assert [text[a:] for a, _ in spans(text, EXCERPT)][1].startswith("Only")


@pytest.mark.parametrize("rule", [TYPED, MARKDOWN])
def test_etc_ends_a_sentence_only_where_the_next_one_begins(rule: SentenceRule) -> None:
    """ "... transaction logs/trails etc. are usually collected ..." was cut after "etc.", and its second half
    opened a line on "are usually collected"."""
    text = "Audit and transaction logs etc. are usually kept apart. It reads files, archives, etc. Then it stops."
    assert split(text, rule) == [
        "Audit and transaction logs etc. are usually kept apart.",
        "It reads files, archives, etc.",
        "Then it stops.",
    ]


def test_an_admonitions_opening_line_is_markup_between_sentences() -> None:
    """MkDocs' "!!! note" and "??? tip \"Title\"" open an indented body: read as prose, the type word opened its
    first sentence ("important The tasks are executed in order.")."""
    text = (
        "Use a process manager.\n\n!!! important\n    The tasks are executed in order.\n\n"
        '??? tip "Only trust clients you can trust!"\n    Trusting others lets them spoof addresses.\n'
    )
    assert [piece.strip() for piece in split(text, MARKDOWN) if piece.strip()] == [
        "Use a process manager.",
        "The tasks are executed in order.",
        "Trusting others lets them spoof addresses.",
    ]


def test_a_sentence_asks_by_a_question_mark_or_a_configured_opener_only() -> None:
    openers = ("explain", "can you", "how")
    assert ask_of("- Explain the gate", openers) == "explain" and ask_of("Is it fast?", openers) == "?"
    assert ask_of("Cannot you see", openers) is None and ask_of("How, then", openers) == "how"
    assert asking_sentences("Some background.\nCan you list them. How it works", openers) == [
        "Can you list them.",
        "How it works",
    ]
    assert asks("Background only.", openers) is False


def test_a_cue_phrase_matches_whole_words_only() -> None:
    assert phrase("S3").search("we use s3 daily") and not phrase("s3").search("aws3x")
    assert any_phrase(["you", "thank you"]).search("Thank you!").group(0) == "Thank you"


def test_a_comparing_clause_names_its_two_sides() -> None:
    from ragstream.text.asking import compared_sides

    assert compared_sides("What's the difference between Box<T> and Rc<T>") == ["Box<T>", "Rc<T>"]
    assert compared_sides("Compare JWT with server-side sessions for a mobile app") == ["JWT", "server-side sessions"]
    assert compared_sides("How do I choose between cookies and local storage when users log in?") == [
        "cookies",
        "local storage",
    ]
    assert compared_sides("What is the difference between the two?") == []
    assert compared_sides("How do I read and write files?") == []
    assert compared_sides("What are the trade-offs between Lock and Semaphore?") == ["Lock", "Semaphore"]


def test_between_compares_only_after_a_word_that_compares() -> None:
    """Things that pass between two others are no two sides to tell apart: naming "two tasks" as a topic the
    documents do not cover (anyio's memory object streams answer the ask) was a false Open issue."""
    from ragstream.text.asking import compared_sides

    assert compared_sides("How do I send data between two tasks with a memory object stream?") == []
    assert compared_sides("How do I share state between the middleware and the endpoint?") == []
    assert compared_sides("How do I choose between two tasks with a memory object stream?") == []


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ('the {{HTTPHeader("If-Match")}} header', "the If-Match header"),
        ('a {{HTTPStatus("412", "412 Precondition Failed")}} error', "a 412 Precondition Failed error"),
        ('calls {{domxref("Window.fetch()")}} once', "calls Window.fetch() once"),
        ("## Specifications\n\n{{Specifications}}\n", "## Specifications\n\n\n"),
        ('{{% note %}}Keep it.{{% /note %}} {{< tab "A" >}}x{{< /tab >}}', "Keep it. x"),
        ("Hello {{ page.title }} and {{user.name}}", "Hello {{ page.title }} and {{user.name}}"),
    ],
)
def test_a_template_macro_reads_as_the_page_shows_it(written: str, shown: str) -> None:
    """KumaScript macros show their last quoted argument or nothing, shortcodes nothing, the text between
    shortcodes stays, and a template variable (its value is not in the document) is left as it is."""
    assert shown_text(written) == shown


def test_a_sentence_keeps_its_closing_quote_and_never_ends_inside_a_link_it_opens() -> None:
    """Google's review guide: 'There are no hard and fast rules about how large is "too large." 100 lines is ...'
    gave the line 'how large is "too large.', its closing quote cut off; Cargo's 'see ["Why is Cargo rebuilding my
    code?" in the FAQ](../faq.md).' was cut after the quoted title's "?", inside the link's text."""
    text = (
        'There are no hard and fast rules about how large is "too large." 100 lines is usually a reasonable size. '
        'If you do not know why, see ["Why is Cargo rebuilding my code?" in the FAQ](../faq.md). Then rebuild.'
    )
    assert split(text, MARKDOWN) == [
        'There are no hard and fast rules about how large is "too large."',
        "100 lines is usually a reasonable size.",
        'If you do not know why, see ["Why is Cargo rebuilding my code?" in the FAQ](../faq.md).',
        "Then rebuild.",
    ]
    assert [text[a:].split()[0] for a, _ in spans(text, EXCERPT)] == ["There", "100", "If", "Then"]
