"""Offline A3/A4/A5 decisions a user notices in the final prompt (issue 24), on small hand-made inputs.

The quality suite (tests/quality) checks the same behaviour end to end on public documentation sets.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragstream.condensing.extractive import classify, sentences_of, stands_alone
from ragstream.gate.ask_parts import asking_parts
from ragstream.gate.coverage import uncovered_parts
from ragstream.gate.evidence import rarity_of, weigh, weigh_all
from ragstream.gate.neighbours import keep_adjacent, keep_unsure
from ragstream.gate.references import keep_referenced
from ragstream.preprocessing.schema import load_prompt_schema
from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.shaping.format_enforcer import enforce
from ragstream.state import Chunk, PromptBody, Span
from ragstream.text.asking import clauses
from tests.helpers import preprocessed


def _chunk(text: str, name: str = "doc.md") -> Chunk:
    return Chunk(
        id=f"{name}@0#0", source_path=name, sha256="0" * 64, chunk_index=0, text=text, span=Span(start=0, end=len(text))
    )


def _unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


DOC = """---
title: Options
---

<!-- generated -->

Some of the important concepts are:

- Options are optional and named.
- Arguments are positional and required.

In the next chapter you'll see how to hash passwords.

This rung is recorded in the report.

Example usage::

    $ hello --count 3
    Hello World!

See the API page for how values are converted.

Click validates every value before it calls the command.

The options table:

| name | meaning |
|---|---|

```python
x = 1

result = compute(x)
```

A file argument must exist, for example when you receive a file that must go through a slow process.
"""


def test_only_prose_that_stands_alone_is_offered(settings: Settings) -> None:
    found = [s.text for s in sentences_of(_chunk(DOC)) if stands_alone(s.text, settings.condenser)]
    assert found == [
        "Some of the important concepts are: - Options are optional and named. - Arguments are positional and "
        "required.",
        "Click validates every value before it calls the command.",
        "A file argument must exist, for example when you receive a file that must go through a slow process.",
    ]


def test_an_example_with_must_is_not_a_constraint(settings: Settings) -> None:
    assert (
        classify("A file argument must exist, for example when you receive a file.", settings.condenser)[0] == "facts"
    )
    assert classify("A file argument must exist before the command runs.", settings.condenser)[0] == "constraints"


def test_a_rule_word_inside_an_indirect_question_files_no_constraint(settings: Settings) -> None:
    """OWASP's "The `X-Frame-Options` HTTP response header can be used to indicate whether or not a browser should be
    allowed to render a page ..." and MDN's "... to indicate how long a client should wait ..." were Constraints for
    their "should": each says what a header tells, and its "should" is what the indirect question asks about. A rule
    word the sentence states, also beside such a question, still files it as a Constraint."""
    for described in (
        "The policy header can be used to indicate whether or not a browser should be allowed to embed the page.",
        "A delay header may be sent to indicate how long a client should wait before it asks again.",
        "The log records what the worker must do next and why it must do it.",
    ):
        assert classify(described, settings.condenser)[0] == "facts", described
    for rule in (
        "The server decides what the client should do next, and the client must follow it.",
        "Timeouts must be enforced on the server.",
    ):
        assert classify(rule, settings.condenser)[0] == "constraints", rule


def test_a_word_for_not_known_that_describes_something_is_no_open_issue(settings: Settings) -> None:
    """ "Unknown" describes as often as it leaves a point open: cargo names targets "x86_64-unknown-linux-gnu", MDN says
    a body "of unknown length"; each such sentence was filed as an Open issue. A point is open when the sentence says
    it is not known ("is still unknown", "it is unclear whether ...")."""
    for described in (
        "Set the linker for the `x86_64-unknown-linux-gnu` target in the `[target]` table.",
        "Response bodies may be of unknown length and encoded in chunks.",
        "Cargo warns about an unknown lint instead of failing the build.",
    ):
        assert classify(described, settings.condenser)[0] != "open_issues", described
    for left_open in ("Who owns the cache layer is still unknown.", "It is unclear whether the flag will be kept."):
        assert classify(left_open, settings.condenser)[0] == "open_issues", left_open


def test_waiting_pending_a_timeout_is_no_open_issue(settings: Settings) -> None:
    """uvicorn's "Otherwise connections will stay open, pending the keep-alive timeout." was filed as an Open issue
    (the cue "pending"): an Open issue says the documents leave a point open, and this one leaves nothing open."""
    stated = "Otherwise connections will stay open, pending the keep-alive timeout."
    assert classify(stated, settings.condenser)[0] == "facts"
    assert classify("Whether the cache is shared is still open.", settings.condenser)[0] == "open_issues"


def test_a_cue_inside_a_code_span_is_quoted_not_a_rule(settings: Settings) -> None:
    """The Rust book's "the error message just prints `Should have been able to read the file`" reports a
    message; it is no rule of the documents, so it is a fact, not a Constraint."""
    quoted = "The error message just prints `Should have been able to read the file`, which says little."
    assert classify(quoted, settings.condenser) == ("facts", "")
    assert classify("The file should be readable by the `app` user.", settings.condenser)[0] == "constraints"


def test_cues_read_typographic_apostrophes_and_a_tag_quoting_angle_brackets_is_markup(settings: Settings) -> None:
    """The Rust book writes "Let’s" and "can’t": narration and rules are the same with either apostrophe. Its
    listing tags quote code (`MyBox<T>`) in an attribute: still one tag, no line."""
    cfg = settings.condenser
    assert not stands_alone("Let’s look at how the annotations restrict the `longest` function.", cfg)
    assert classify("You can’t remove previous versions of a crate.", cfg)[0] == "constraints"
    tag = '<Listing number="15-8" file-name="src/main.rs" caption="Defining a `MyBox<T>` type">'
    assert [s.text for s in sentences_of(_chunk(f"# Deref\n\n{tag}\n\nWe define a struct named MyBox.\n"))] == [
        "We define a struct named MyBox."
    ]


def test_a_sentence_that_states_something_before_it_turns_to_narrate_is_a_line(settings: Settings) -> None:
    """ "The standard library provides the `eprintln!` macro ..., so let’s change ..." answers where errors
    go: the narration comes after a clause that states something. An opening phrase states nothing."""
    cfg = settings.condenser
    stated = "The logging module provides a `journal` handler that writes to systemd, so let’s switch both calls to it."
    assert stands_alone(stated, cfg)
    assert not stands_alone("As an example of where a handler fits, let’s look at the `journal` handler.", cfg)
    assert not stands_alone("Let’s switch both calls to the `journal` handler.", cfg)


def test_a_sentence_about_the_page_itself_is_not_a_line(settings: Settings) -> None:
    """An index page's "This article describes different methods of caching ..." says what another page holds,
    not what the subject is: it is no Fact, and the sentence before it stands alone."""
    cfg = settings.condenser
    assert not stands_alone("This article describes the structure of a message and its types.", cfg)
    assert not stands_alone("In short, this page is an introduction to access control.", cfg)
    # a pointer back into the page ("`mkdocs serve --clean` (described above).") says nothing without it
    assert not stands_alone("`mkdocs serve --clean` (described above).", cfg)
    assert not stands_alone("The options mentioned above apply to every theme.", cfg)
    assert not stands_alone("`mkdocs build -f -` (described directly above).", cfg)
    assert stands_alone("Every message has a start line, headers and an optional body.", cfg)


def test_a3_keeps_nothing_when_no_candidate_has_evidence(settings: Settings) -> None:
    """Absolute evidence: the best of a bad lot is still dropped (a ratio to the best would keep it)."""
    candidates = [
        _chunk("The framework renders templates quickly.", "a.md"),
        _chunk("The framework ships a CLI.", "b.md"),
    ]
    vectors = np.stack([_unit(0.3, 1.0, 0.0), _unit(0.25, 1.0, 0.2)])
    ask = _unit(1.0, 0.0, 0.0)[None, :]
    rarity = rarity_of({"framework": 100, "rate": 0, "limit": 0}, 100)
    kept, report = weigh(["How do I rate limit the framework?"], candidates, vectors, ask, settings.gate, rarity)
    assert kept == [] and all(d.decision == "drop_irrelevant" for d in report.decisions.values())
    assert all("cosine 0.2" in d.reason for d in report.decisions.values())


def test_a3_keeps_a_candidate_with_the_asks_rare_words(settings: Settings) -> None:
    candidates = [_chunk("Rate limits cap the requests per minute.", "limits.md")]
    vectors = np.stack([_unit(1.0, 1.0, 0.0)])
    rarity = rarity_of({"rate": 2, "limit": 3, "request": 10}, 100)
    kept, _ = weigh(
        ["How do I rate limit requests?"], candidates, vectors, _unit(1.0, 0.0, 0.0)[None, :], settings.gate, rarity
    )
    assert kept == ["limits.md@0#0"]


def test_an_ask_splits_into_clauses_only_where_each_clause_asks_and_stands(settings: Settings) -> None:
    openers = load_prompt_schema(settings.prompt_schema_path).ask_openers
    enough = lambda clause: len(clause.split()) >= 4  # noqa: E731
    assert clauses(
        "How is X rate-limited on Kubernetes, and how are changed documents re-embedded?", openers, enough
    ) == [
        "How is X rate-limited on Kubernetes",
        "how are changed documents re-embedded?",
    ]
    assert clauses("Explain how callbacks see values; also list the chat widgets.", openers, enough) == [
        "Explain how callbacks see values",
        "list the chat widgets.",
    ]
    assert clauses("How do I read and write files?", openers, enough) == ["How do I read and write files?"]
    standing = lambda clause: "their" not in clause  # noqa: E731
    assert clauses("What are slotted classes and what are their drawbacks?", openers, standing) == [
        "What are slotted classes and what are their drawbacks?"  # a clause the caller finds leaning stays joined
    ]
    assert clauses("We use salt and pepper. How is soup made?", openers, enough) == ["How is soup made?"]
    # a sentence that opens by joining on ("Also how do we ...") asks without its join: named as uncovered, it read
    # "The documents do not cover: Also how do we measure review latency in Gerrit dashboards?"
    assert clauses("What is an emergency CL? Also how do we measure review latency?", openers, enough) == [
        "What is an emergency CL?",
        "how do we measure review latency?",
    ]
    # a request for a piece of writing asks what the writing is about: "Write a one-paragraph summary for the new
    # hire of which database we use ..." was named "The documents do not cover: Write a one-paragraph summary ..."
    written = load_prompt_schema(settings.prompt_schema_path).deliverable_verbs
    summary = (
        "Write a one-paragraph summary for the new hire of which database we use and what alternatives we rejected."
    )
    assert clauses(summary, openers, enough, (), written) == ["which database we use", "what alternatives we rejected."]
    assert clauses("Write a pytest test for fetch_rates() with a fixed wait.", openers, enough, (), written) == [
        "Write a pytest test for fetch_rates() with a fixed wait."  # no question word: the whole request is the ask
    ]


def test_a_clause_ending_on_that_points_back_and_is_never_named_alone(settings: Settings) -> None:
    """ "How do we avoid that?" names what it asks about only by "that", which ends its clause as a pronoun (not the
    conjunction): named alone, "No excerpt answers: How do we avoid that?" left a uvicorn prompt's condensed context
    without a line beside 29 kept chunks. It stays a clause of the ask, read with the sentence it points back to,
    never a part named in the Open issues."""
    problem = "Our workers get killed while a long request is still running, and users see 502 errors."
    sp = preprocessed(f"{problem} How do we avoid that? Can the server ship its logs to Datadog?", settings)
    assert asking_parts(sp, settings) == [
        f"{problem} How do we avoid that?",
        "Can the server ship its logs to Datadog?",
    ]
    assert asking_parts(sp, settings, standalone=True) == ["Can the server ship its logs to Datadog?"]
    sp = preprocessed("Is there a way to check that the cache key is unique per tenant in the app?", settings)
    assert asking_parts(sp, settings, standalone=True) != []  # "that" opening a clause is the conjunction


def test_a3_keeps_a_chunk_for_one_clause_of_a_two_part_ask_and_keeps_the_order_it_was_given(settings: Settings) -> None:
    candidates = [
        _chunk("Pods scale with replicas.", "pods.md"),
        _chunk("Documents are re-embedded; changed hashes are stored.", "notes.md"),
        _chunk("Changed documents are re-embedded when their hash changes.", "ingest.md"),
    ]
    whole, first, second = _unit(1.0, 1.0, 0.0), _unit(1.0, 0.0, 0.0), _unit(0.0, 1.0, 0.0)
    vectors = np.stack([_unit(1.0, 0.0, 3.0), _unit(-0.5, 1.0, 0.9), _unit(-0.5, 1.0, 0.5)])
    rarity = rarity_of({"kubernet": 0, "rate": 0, "limit": 0, "chang": 3, "document": 5, "re": 9, "embed": 2}, 100)
    texts = ["How is it rate-limited on Kubernetes, and how are changed documents re-embedded?"]
    texts += ["How is it rate-limited on Kubernetes", "how are changed documents re-embedded?"]
    alone = weigh_all(texts[:1], candidates, vectors, whole[None, :], settings.gate, rarity)
    assert "ingest.md@0#0" not in alone.kept  # judged against the whole sentence, the covered half is lost
    found = weigh_all(texts, candidates, vectors, np.stack([whole, first, second]), settings.gate, rarity)
    # the gate decides what stays, the ranker what comes first: the closer chunk does not jump ahead
    assert found.kept == ["notes.md@0#0", "ingest.md@0#0"]
    assert "for 'how are changed documents re-embedded?'" in found.report.decisions["ingest.md@0#0"].reason


def test_a3_keeps_a_file_a_kept_chunk_names_for_the_ask(settings: Settings) -> None:
    candidates = [
        _chunk(
            "Stages run in order. See retrieval.md for how chunks are found and meeting.md for the minutes.", "a.md"
        ),
        _chunk("The controller searches vectors and BM25.", "retrieval.md"),
        _chunk("We met on Tuesday.", "meeting.md"),
    ]
    ask = _unit(1.0, 0.0, 0.0)
    vectors = np.stack([_unit(1.0, 0.1, 0.0), _unit(0.2, 1.0, 0.0), _unit(0.1, 0.0, 1.0)])
    weighed = weigh_all(["How do chunks reach the prompt?"], candidates, vectors, ask[None, :], settings.gate)
    assert weighed.kept == ["a.md@0#0"]
    said = {
        "Stages run in order.": _unit(0.0, 0.0, 1.0),
        "See retrieval.md for how chunks are found and": _unit(1.0, 0.5, 0.0),
        "meeting.md for the minutes.": _unit(0.0, 1.0, 0.0),
    }
    found = keep_referenced(
        weighed,
        candidates,
        ["How do chunks reach the prompt?"],
        ask[None, :],
        lambda texts: np.stack([said[t] for t in texts]),
        settings.gate,
    )
    assert found.kept == ["a.md@0#0", "retrieval.md@0#0"]  # the minutes are named too, but not for the ask
    assert "kept by reference" in found.report.decisions["retrieval.md@0#0"].reason
    assert found.report.decisions["meeting.md@0#0"].decision == "drop_irrelevant"


def test_a3_keeps_a_chunk_with_weak_evidence_beside_a_kept_chunk_of_its_file(settings: Settings) -> None:
    def part(name: str, index: int, text: str) -> Chunk:
        span = Span(start=0, end=len(text))
        return Chunk(id=f"{name}@0#{index}", source_path=name, sha256="0" * 64, chunk_index=index, text=text, span=span)

    candidates = [
        part("before_sleep.py", 0, "def before_sleep_log(logger, log_level, exc_info=False):"),
        part("before_sleep.py", 1, "    local_exc_info = state.outcome.exception()"),  # the definition runs on
        part("before_sleep.py", 2, "    logger.log(log_level, msg)"),  # beside it too, but under the weak evidence
        part("before_sleep.py", 4, "    return None"),  # weak evidence, but two chunks away
        part("nap.py", 1, "    time.sleep(seconds)"),  # weak evidence, another file
        part("retry.py", 3, "def retry(*dargs):"),  # kept on its own: read before the neighbour kept for its sake
    ]
    ask = _unit(1.0, 0.0)
    weak, kept = _unit(0.5, 0.866), _unit(1.0, 0.2)
    vectors = np.stack([kept, weak, _unit(0.3, 0.954), weak, weak, kept])
    weighed = weigh_all(["How do I log a retry with its traceback?"], candidates, vectors, ask[None, :], settings.gate)
    assert weighed.kept == ["before_sleep.py@0#0", "retry.py@0#3"]
    found = keep_adjacent(weighed, candidates, settings.gate)
    assert found.kept == ["before_sleep.py@0#0", "retry.py@0#3", "before_sleep.py@0#1"]
    assert "beside chunk 0 of its file" in found.report.decisions["before_sleep.py@0#1"].reason
    assert found.report.counts == {"keep": 3, "drop_irrelevant": 3}


def test_a3_keeps_the_unsure_band_last_only_for_an_ask_the_documents_treat(settings: Settings) -> None:
    """Offline nobody decides the band between `gate.weak_evidence` and the floor (a model does): a typo-laden ask
    ("hw do i exit ... when validaton fails??") spread its word weight so thin that the page answering it reached
    0.48 and the prompt showed one excerpt. When the documents treat the ask, the band is kept after the sure chunks;
    an ask naming what they lack, or one they do not answer at all, keeps none of it."""
    candidates = [
        _chunk("Errors print a traceback.", "exceptions.md"),
        _chunk("Raise typer.Exit with a code.", "terminating.md"),
        _chunk("Colors are printed with rich.", "printing.md"),
        _chunk("An app can exit without a traceback.", "far.md"),  # the ask's words, but far in meaning: no band
    ]
    ask = _unit(1.0, 0.0)
    vectors = np.stack([_unit(0.5, 0.866), _unit(0.35, 0.937), _unit(0.3, 0.954), _unit(0.2, 0.98)])
    weighed = weigh_all(["hw do i exit my app, no traceback"], candidates, vectors, ask[None, :], settings.gate)
    evidence = weighed.evidence
    assert weighed.kept == ["exceptions.md@0#0"]
    assert settings.gate.weak_evidence <= evidence["terminating.md@0#0"] < settings.gate.min_evidence
    assert evidence["printing.md@0#0"] < settings.gate.weak_evidence
    found = keep_unsure(weighed, candidates, settings.gate, treated=True)
    assert found.kept == ["exceptions.md@0#0", "terminating.md@0#0"]
    assert found.report.unsure == ["terminating.md@0#0"]
    assert "unsure band" in found.report.decisions["terminating.md@0#0"].reason
    assert evidence["far.md@0#0"] >= settings.gate.weak_evidence and "far.md@0#0" not in weighed.short
    assert found.report.counts == {"keep": 2, "drop_irrelevant": 2}
    lacking = weigh_all(["hw do i exit my app, no traceback"], candidates, vectors, ask[None, :], settings.gate)
    assert keep_unsure(lacking, candidates, settings.gate, treated=False).kept == ["exceptions.md@0#0"]
    nothing = weigh_all(["hw do i exit my app, no traceback"], candidates[1:], vectors[1:], ask[None, :], settings.gate)
    assert nothing.kept == [] and keep_unsure(nothing, candidates[1:], settings.gate, treated=True).kept == []


def test_uncovered_parts_name_the_sentence_and_the_unknown_name(settings: Settings) -> None:
    kept = [_chunk("Validators run in __init__ and reject bad values.", "init.md")]
    parts = ["How do I add a validator?", "How do I deploy it to Kubernetes?", "Can a validator report to Sentry?"]
    part_vectors = np.stack([_unit(1.0, 0.0), _unit(0.0, 1.0), _unit(1.0, 0.1)])
    rarity = rarity_of({"add": 5, "valid": 2, "deploy": 0, "kubernet": 0, "report": 9, "sentri": 0}, 50)
    missing = uncovered_parts(
        parts, part_vectors, kept, _unit(1.0, 0.0)[None, :], settings.gate, rarity, {"deploy", "kubernet", "sentri"}
    )
    assert missing == ["How do I deploy it to Kubernetes?", "Sentry"]
    assert uncovered_parts(parts[:1], part_vectors[:1], [], np.zeros((0, 2)), settings.gate, rarity, set()) == parts[:1]


@pytest.mark.parametrize(
    ("fmt", "present", "absent"),
    [
        (
            "Numbered steps followed by one Python code snippet",
            ["Put the code in a fenced block with its language."],
            ["Explain only in code comments."],
        ),
        ("code only, no prose", ["Explain only in code comments."], []),
        ("JSON", ["Return one valid JSON object."], ["No text before or after the JSON."]),
        ("just the JSON", ["No text before or after the JSON."], []),
        # a checklist or a table written in Markdown is a list or a table: no heading per section nobody asked for
        ("Markdown checklist, max 10 items", ["Answer as a bullet list."], ["Use a heading per section."]),
        ("a Markdown table", ["Answer with a Markdown table."], ["Use a heading per section."]),
        ("Markdown with headings", ["Use a heading per section."], ["Answer as a bullet list."]),
        ("Markdown with short sections and a bullet list of stages", ["Use a heading per section."], []),
        ("Markdown", ["Answer in Markdown."], []),
    ],
)
def test_a5_adds_a_rule_only_for_what_the_format_asks(
    fmt: str, present: list[str], absent: list[str], settings: Settings
) -> None:
    rules = enforce(PromptBody(task="t", format=fmt), Services(settings).runner).rules
    assert set(present) <= set(rules) and not set(absent) & set(rules)


def test_a5_adds_no_length_rule_for_a_depth_nobody_wrote(settings: Settings) -> None:
    runner = Services(settings).runner
    body = PromptBody(task="t", depth="detailed")
    assert not any("words" in r for r in enforce(body, runner, depth_given=False).rules)
    assert any("words" in r for r in enforce(body, runner, depth_given=True).rules)
