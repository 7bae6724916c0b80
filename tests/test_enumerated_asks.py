"""An ask that enumerates what it is about: each item is an ask of its own, and only an enumeration that asks."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from ragstream.gate.ask_parts import asked_items, asking_parts
from ragstream.preprocessing.enumerations import enumerated_items, enumerations
from ragstream.preprocessing.schema import load_prompt_schema
from ragstream.retrieval.planner import asked_parts
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.stages.io import StageEnv
from ragstream.stages.options import RunOptions
from ragstream.stages.retrieval import searched
from tests.helpers import preprocessed

THEMES = (
    "Which of the two built-in themes should we pick, classic or modern? We care about three things: a dark mode "
    "that follows the reader's OS setting, how many levels of nested pages the sidebar shows by default, and "
    "showing our logo in place of the site name."
)
ITEMS = [
    "a dark mode that follows the reader's OS setting",
    "how many levels of nested pages the sidebar shows by default",
    "showing our logo in place of the site name",
]


@pytest.fixture(scope="module")
def settings() -> Settings:
    return load_settings()


@pytest.mark.parametrize(
    ("text", "items"),
    [
        (THEMES, ITEMS),  # inline, after a question, the lead-in says what matters
        (
            "Which theme should we pick? We care about:\n\n- a dark mode that follows the OS setting\n"
            "- showing our logo in place of the site name",
            ["a dark mode that follows the OS setting", "showing our logo in place of the site name"],
        ),
        (
            "Explain the following:\n1. how chunks are found\n2. how they are ranked\n   and merged\n"
            "3. what the budget is",
            ["how chunks are found", "how they are ranked and merged", "what the budget is"],  # a wrapped item is one
        ),
        ("Question:\n- how are chunks found\n- how are they ranked", ["how are chunks found", "how are they ranked"]),
        # Another section's label, a statement, a lead-in that shapes the answer, one phrase's parts: no asks.
        ("Explain how to pick a theme.\nConstraints:\n- must work offline\n- no JavaScript frameworks", []),
        ("How do I fix the build? Here is what I tried:\n- reinstalling the package\n- clearing the cache", []),
        (
            "Which security headers should we send? Answer as a table with three columns: header, recommended value, "
            "and what it protects against.",
            [],
        ),
        (
            "Can you walk me through it step by step, in order: from getting an account set up, through what has to "
            "be in my manifest, to uploading the first version?",
            [],
        ),
        ("Our stack: FastAPI, Postgres, Redis. How should we cache sessions?", []),
    ],
)
def test_the_items_of_an_enumeration_that_asks(settings: Settings, text: str, items: list[str]) -> None:
    assert enumerated_items(enumerations(text, load_prompt_schema(settings.prompt_schema_path))) == items


def test_each_item_is_a_part_of_the_ask_and_the_question_they_elaborate_is_not_named_alone(settings: Settings) -> None:
    """The items are parts (the evidence, the answer's skeleton, what is named when nothing covers it), in the
    ask's order; the question before them is answered by theirs, so only the items are named as uncovered."""
    sp = preprocessed(THEMES, settings)
    question = "Which of the two built-in themes should we pick, classic or modern?"
    assert asking_parts(sp, settings) == [question, *ITEMS]
    assert asking_parts(sp, settings, standalone=True) == ITEMS
    assert asked_items(sp, settings) == ITEMS  # searched for each
    assert len(asked_parts(sp, settings)) == 4  # the plan's candidates grow with them


def test_a_list_item_that_asks_is_a_part_without_its_marker(settings: Settings) -> None:
    sp = preprocessed("Tell me:\n- how are chunks found in the index\n- how are the found chunks ranked", settings)
    assert asking_parts(sp, settings) == ["how are chunks found in the index", "how are the found chunks ranked"]


@pytest.mark.parametrize(
    "prompt",
    [
        "Which of these should I use for sessions: Redis, Memcached, or an in-process cache?",
        "Which theme should we pick? We care about: dark mode, speed, and showing our logo in place of the site name.",
    ],
)
def test_an_enumeration_of_names_stays_one_ask(settings: Settings, prompt: str) -> None:
    """Items that are names ("Redis", "speed") are what the sentence asks between or about, not asks of their own:
    the sentence stays one part, never cut before its last item."""
    sp = preprocessed(prompt, settings)
    first = prompt.split("? ")[0] + ("?" if "? " in prompt else "")
    assert asking_parts(sp, settings) == [first]
    assert asked_items(sp, settings) == []


_WORDS = [
    "sidebar",
    "logo",
    "cache",
    "database",
    "query",
    "worker",
    "timeout",
    "header",
    "cookie",
    "session",
    "theme",
    "index",
    "token",
    "upload",
    "deploy",
    "retries",
    "socket",
    "mirror",
    "plugin",
    "sitemap",
    "locale",
    "backup",
]
_ITEM = st.lists(st.sampled_from(_WORDS), min_size=2, max_size=4, unique=True).map(" ".join)
_QUESTIONS = ["Which settings should we change?", "How should we configure the service?", "Which theme fits our site?"]
_LEADS = ["We care about three things:", "We need:", "Our requirements:", "The points that matter:"]


@hyp_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(  # an item inside another: placed where it stands, not where its words first occur (found by CI)
    question=_QUESTIONS[0],
    lead=_LEADS[0],
    items=["logo sidebar mirror", "sidebar logo", "sidebar mirror"],
    listed=False,
    label="",
)
@given(
    question=st.sampled_from(_QUESTIONS),
    lead=st.sampled_from(_LEADS),
    items=st.lists(_ITEM, min_size=2, max_size=5, unique=True),
    listed=st.booleans(),
    label=st.sampled_from(["", "Constraints:", "Context:", "Notes:"]),
)
def test_the_parts_of_an_enumerated_ask_are_its_question_then_its_items_in_order(
    settings: Settings, question: str, lead: str, items: list[str], listed: bool, label: str
) -> None:
    """Whatever the items and however they are written (inline, the last after ", and", or as a list), the parts
    are the question, then each item in order, and the named parts the items alone; under another section's
    label the same list asks nothing and the question stays the only part."""
    lead = label or lead
    body = "\n".join(f"- {item}" for item in items) if listed else ", ".join(items[:-1]) + f", and {items[-1]}."
    sp = preprocessed(f"{question} {lead}{chr(10) if listed else ' '}{body}", settings)
    if label:
        assert asking_parts(sp, settings) == [question] and asked_items(sp, settings) == []
    else:
        assert asking_parts(sp, settings) == [question, *items]
        assert asking_parts(sp, settings, standalone=True) == items
        assert asked_items(sp, settings) == items


def test_each_item_is_searched_with_the_weight_of_a_prompt_piece(settings: Settings) -> None:
    """Each item is a query of its own, weighted as a prompt piece is (`retrieval.items_weight`), not a share of
    one weight: with a third each, uvicorn's graceful-shutdown timeout fell outside the excerpts."""
    services = Services(settings)
    queries = searched(preprocessed(THEMES, services), StageEnv(services=services, context=RunOptions()))
    assert [(q.text, q.weight) for q in queries[-3:]] == [(item, settings.retrieval.items_weight) for item in ITEMS]
    assert settings.retrieval.items_weight == 1.0


def test_a_clause_leaning_on_what_the_user_said_before_it_is_read_with_those_sentences(settings: Settings) -> None:
    """ "How do I stop this using standard HTTP headers?" asks about the lost updates the sentences before it tell
    of: judged alone, its evidence went to CORS ("adding new HTTP headers"). It is read with them, back to the ask
    before it at most, and the parts named as uncovered are unchanged."""
    story = (
        "Two editors in our CMS sometimes open the same article, and whoever saves last silently wipes out the other"
        " person's changes. The backend saves articles with PUT /articles/{id}."
    )
    sp = preprocessed(f"{story} How do I stop this using standard HTTP headers?", settings)
    assert asking_parts(sp, settings) == [f"{story} How do I stop this using standard HTTP headers?"]
    sp = preprocessed("What is an ETag header? How do I use it for caching?", settings)
    assert asking_parts(sp, settings) == ["What is an ETag header?", "How do I use it for caching?"]
