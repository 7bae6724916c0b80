"""The run's plan: intent decided once per run, retrieval as planned, user options winning, and what
a failed retrieval gives. Real indexed projects, real graph runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragstream.app.controller import AppController
from ragstream.errors import RetrievalError
from ragstream.index.manifest import committed_generation, generation_dir
from ragstream.ingestion.manager import IngestionManager
from ragstream.retrieval.planner import by_rules, classify
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.tenancy.projects import project_paths
from tests.helpers import preprocessed, unfenced
from tests.openai_server import schema_responder

REWRITE = (
    "Rewrite this paragraph more formally: the index kinda gets rebuilt when stuff changes, and we gotta wait for it."
)


def _run(settings: Settings, prompt: str, **options: object):
    ctl = AppController(settings, services=Services(settings))
    ctl.select_project("demo")
    return ctl.run_full_pipeline(prompt, **{"pause_after": "none", **options})


@pytest.mark.parametrize("prompt", ["Thanks, that helped!", REWRITE])
def test_nothing_to_look_up_retrieves_nothing_and_says_why(indexed: Settings, prompt: str) -> None:
    sp = _run(indexed, prompt)
    plan = sp.extras.retrieval.plan
    assert plan is not None and not plan.retrieve and plan.source == "rules" and plan.confidence >= 0.6
    assert plan.intent in ("conversational", "transform") and "no retrieval" in plan.reason and plan.evidence
    assert (
        sp.base_context_chunks == [] and sp.final_selection_ids == [] and sp.extras.retrieval.rung == "skipped_by_plan"
    )
    final = sp.prompt_ready
    assert prompt in final  # the user's words, whole
    assert (
        "excerpt" not in final.lower() and "condensed context" not in final.lower()
    )  # nothing to ground in, so no such instruction
    assert sp.run_metadata.route == plan.intent and sp.run_metadata.plan == plan


def test_a_research_question_gets_the_research_plan(indexed: Settings) -> None:
    sp = _run(indexed, "Compare the trade-offs of dense and lexical retrieval for this project, in depth.")
    plan = sp.extras.retrieval.plan
    settings = indexed.plan
    breadth = indexed.retrieval.max_candidates + settings.breadth_candidates  # one part asked, its breadth named
    assert (plan.intent, plan.retrieve, plan.candidates, plan.budget) == ("research", True, breadth, 9000)
    assert settings.research_budget == 9000 and f"{breadth} candidates for 1 part asked, breadth named" in plan.reason
    assert sp.extras.retrieval.strategy == plan.strategy == "EXPLORATORY"
    assert sp.extras.build.budget.ceiling == settings.research_budget and sp.final_selection_ids


RESEARCH = [  # written for this test, none of them the sentence: research by the words of the ask
    "I'm researching how RAGstream builds its index: how are files cut into chunks, and how are the chunks ranked?",
    "We are investigating why ingestion slows down on large folders. What does each phase cost?",
    "For a design review I need an in-depth look at how retrieval works.",
    "What are the pros and cons of the two reranker kinds?",
    "Can you do a deep dive into how the gate decides what to keep?",
    "Comparing dense and lexical retrieval: which one suits code search better",
]
FACTUAL = [  # one thing asked or several, whatever the punctuation: lookups, not research
    "What is the default chunk size??",
    "Where is the checkpoint database stored?",
    "How do I read and write files?",
    "Can you tell me which port the server listens on?",
    "How do I keep the cache small?!",
    "Show the command that re-ingests a project.",
    "Why does ingestion skip hidden folders? What happens to symlinks?",
    "How does the reranker weigh dense and lexical evidence, and what does the gate do with weak chunks?",
]


@pytest.mark.parametrize("prompt", RESEARCH)
def test_research_is_recognised_by_what_is_asked(settings: Settings, prompt: str) -> None:
    decided, confidence, reason, evidence = classify(preprocessed(prompt, settings), settings)
    assert decided == "research" and confidence >= settings.plan.min_confidence, reason
    assert evidence and evidence[0].lower() in prompt.lower()  # the words it rests on


@pytest.mark.parametrize("prompt", FACTUAL)
def test_lookups_are_factual_however_many_and_however_punctuated(settings: Settings, prompt: str) -> None:
    decided, confidence, reason, _ = classify(preprocessed(prompt, settings), settings)
    assert decided == "factual" and confidence >= settings.plan.min_confidence, reason


@pytest.mark.parametrize(
    ("prompt", "parts", "breadth"),
    [
        ("Where is the checkpoint database stored?", 1, False),
        ("How are chunks ranked, and what does the gate do with weak ones?", 2, False),
        ("Why are hidden folders skipped? What happens to symlinks? How are ignore files read?", 3, False),
        ("Compare the two reranker kinds in depth.", 1, True),
        ("Compare how chunks are ranked, and explain what the gate does with weak ones.", 2, True),
    ],
)
def test_the_candidate_count_follows_the_ask(settings: Settings, prompt: str, parts: int, breadth: bool) -> None:
    rules = settings.plan
    wanted = settings.retrieval.max_candidates + rules.candidates_per_part * (parts - 1)
    wanted = min(wanted + (rules.breadth_candidates if breadth else 0), rules.research_candidates)
    plan = by_rules(preprocessed(prompt, settings), settings)
    assert plan.candidates == wanted, plan.reason
    assert f"{wanted} candidates for {parts} part{'s' if parts > 1 else ''} asked" in plan.reason


def test_a_model_calling_every_ask_research_does_not_widen_a_one_part_ask(openai_on_indexed) -> None:
    def planner(request: dict) -> str:
        schema = request.get("response_format", {}).get("json_schema", {}).get("schema", {})
        if "intent" in schema.get("properties", {}):
            return json.dumps({"intent": "research", "confidence": 0.9, "reason": "a docs question"})
        return schema_responder(request)

    server, settings = openai_on_indexed()
    server.responder = planner
    one = _run(settings, "How do I keep the index small?").extras.retrieval.plan
    two = _run(settings, "How is the index kept small, and what does the nightly job rebuild?").extras.retrieval.plan
    guess = _run(settings, "Index size").extras.retrieval.plan  # no rule states an intent: the model decides
    assert (one.source, one.intent, two.intent) == ("rules", "factual", "factual")  # a question states it
    assert "the model chose research: 'a docs question'; the prompt's words decide" in one.reason
    assert one.candidates == settings.retrieval.max_candidates  # the intent alone widens nothing
    assert two.candidates == settings.retrieval.max_candidates + settings.plan.candidates_per_part
    # Offline the rules are unsure of "Index size" and widen to the research count; the model, sure of "research"
    # on no words of the prompt, plans no lookup of its own: the run retrieves as the offline run does.
    local = settings.model_copy(update={"llm": settings.llm.model_copy(update={"provider": "local"})})
    offline = _run(local, "Index size").extras.retrieval.plan
    assert (guess.source, guess.intent, guess.strategy) == ("rules", offline.intent, offline.strategy)
    assert guess.candidates == offline.candidates == settings.plan.research_candidates
    assert "the model chose research: 'a docs question'; a lookup is planned by the rules" in guess.reason


def test_a_model_does_not_plan_retrieval_for_text_the_prompt_gives_to_rewrite(openai_on_indexed) -> None:
    """Issue 40 (OWASP c09): the model planned a lookup for "Shorten this to two sentences ...: <text>", and the
    prompt said the documents do not cover the paragraph."""

    def planner(request: dict) -> str:
        schema = request.get("response_format", {}).get("json_schema", {}).get("schema", {})
        if "intent" in schema.get("properties", {}):
            return json.dumps({"intent": "factual", "confidence": 0.9, "reason": "a request about the service"})
        return schema_responder(request)

    server, settings = openai_on_indexed()
    server.responder = planner
    sp = _run(settings, 'Shorten this to one sentence: "The nightly job rebuilds the index and then restarts."')
    plan = sp.extras.retrieval.plan
    assert (plan.source, plan.intent, plan.retrieve) == ("rules", "transform", False)
    assert "the model chose factual" in plan.reason and "do not cover" not in sp.prompt_ready


@pytest.mark.parametrize("forced", ["KEYWORD", "SEMANTIC"])  # SEMANTIC: the seed's name for KEYWORD
def test_a_forced_strategy_overrides_the_plan(indexed: Settings, forced: str) -> None:
    sp = _run(indexed, "Thanks, that helped!", strategy=forced, skip=["rerank"])
    plan = sp.extras.retrieval.plan
    assert (
        plan.source == "user" and plan.retrieve and plan.strategy == "KEYWORD" and "forced by the user" in plan.reason
    )
    assert sp.extras.retrieval.strategy == "KEYWORD" and "rerank" not in [s.value for s in sp.history_of_stages]


def test_an_unsure_plan_escalates_to_a_wider_retrieval(indexed: Settings) -> None:
    sp = _run(indexed, "Rewrite this paragraph more formally")  # which paragraph? maybe one in the documents
    plan = sp.extras.retrieval.plan
    assert plan.confidence < indexed.plan.min_confidence and plan.retrieve and plan.escalated
    assert plan.candidates == indexed.plan.research_candidates and sp.base_context_chunks


@pytest.mark.parametrize(
    ("prompt", "intent"),
    [  # written before the rules were run on them
        ("Cheers, much appreciated.", "conversational"),
        ("Good morning!", "conversational"),
        ("Please proofread the following: Their going to the store tomorow and will buy three apple.", "transform"),
        ("Translate to French: The checkpoint is written after every stage of the run.", "transform"),
        (
            "# Task\nMake this more concise\n# Context\nWe have decided that going forward we will be rebuilding the "
            "index nightly.",
            "transform",
        ),
        ("What is the default chunk size?", "factual"),
        ("List the stages of the pipeline", "factual"),
        ("Thanks! Can you also explain how the reranker weights are chosen?", "factual"),
        ("Evaluate the strengths and weaknesses of score fusion versus a cross-encoder.", "research"),
        ("Why does ingestion skip hidden folders? What happens to symlinks?", "factual"),  # two lookups
    ],
)
def test_intent_rules_on_prompts_they_were_not_tuned_on(settings: Settings, prompt: str, intent: str) -> None:
    decided, confidence, reason, _ = classify(preprocessed(prompt, settings), settings)
    assert decided == intent, reason
    assert confidence >= settings.plan.min_confidence


def test_with_an_llm_the_plan_agent_decides(openai_on_indexed) -> None:
    def planner(request: dict) -> str:
        schema = request.get("response_format", {}).get("json_schema", {}).get("schema", {})
        if "intent" in schema.get("properties", {}):
            return json.dumps(
                {"intent": "conversational", "confidence": 0.93, "reason": "'thanks' with nothing to look up"}
            )
        return schema_responder(request)

    server, settings = openai_on_indexed()
    server.responder = planner
    sp = _run(settings, "Thanks, that helped!")
    plan = sp.extras.retrieval.plan
    assert (plan.source, plan.intent, plan.retrieve, plan.confidence) == ("llm", "conversational", False, 0.93)
    assert "'thanks'" in plan.reason and sp.base_context_chunks == []
    assert sp.run_metadata.usage["retrieval"].calls == 1  # the planner's call, counted where it was made


def _broken_project(tmp_path: Path, on_failure: str) -> Settings:
    """A project whose index holds vectors of another embedding size: every dense search fails."""
    settings = load_settings(
        overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local", "plan.on_retrieval_failure": on_failure}
    )
    docs = tmp_path / "data" / "doc_raw" / "demo"
    docs.mkdir(parents=True)
    (docs / "notes.md").write_text(
        "# Notes\n\nThe nightly job rebuilds the index from the raw folder.\n", encoding="utf-8"
    )
    IngestionManager(settings).ingest("demo")
    paths = project_paths(settings, "demo")
    folder = generation_dir(paths.index_dir, committed_generation(paths.manifest_path))
    np.save(folder / "vectors.npy", np.ones((1, 7), dtype=np.float32))
    return settings


def test_a_failed_retrieval_fails_the_stage_by_default(tmp_path: Path) -> None:
    settings = _broken_project(tmp_path, "fail")
    ctl = AppController(settings, services=Services(settings))
    ctl.select_project("demo")
    ctl.preprocess("How does the nightly job rebuild the index?")
    before = ctl.sp
    with pytest.raises(RetrievalError, match="every retriever failed"):
        ctl.run_full_pipeline("How does the nightly job rebuild the index?", pause_after="none", strategy="DENSE")
    assert ctl.sp.stage.value == "a2" and ctl.sp.base_context_chunks == before.base_context_chunks


def test_continue_policy_builds_without_excerpts_and_says_so(tmp_path: Path) -> None:
    settings = _broken_project(tmp_path, "continue")
    sp = _run(settings, "How does the nightly job rebuild the index?", strategy="DENSE")
    assert sp.stage.value == "built" and sp.base_context_chunks == []
    assert "every retriever failed" in sp.extras.retrieval.failure and sp.extras.retrieval.rung == "failed"
    assert sp.run_metadata.retrieval.failure == sp.extras.retrieval.failure
    assert "### Open issues\n- No excerpts: retrieval from project 'demo' failed" in sp.prompt_ready
    assert "nightly job rebuilds" not in unfenced(sp.prompt_ready) and "## Source excerpts" not in sp.prompt_ready


def test_an_invalid_plan_reply_falls_back_to_the_rules(openai_on_indexed) -> None:
    def broken(request: dict) -> str:
        schema = request.get("response_format", {}).get("json_schema", {}).get("schema", {})
        if "intent" in schema.get("properties", {}):
            return json.dumps({"intent": "small talk", "confidence": 3})  # not in the enum, out of range, no reason
        return schema_responder(request)

    server, settings = openai_on_indexed()
    server.responder = broken
    sp = _run(settings, "Thanks, that helped!")
    plan = sp.extras.retrieval.plan
    assert (plan.source, plan.intent, plan.retrieve) == ("rules", "conversational", False) and plan.evidence


def test_a_low_confidence_plan_strategy_is_re_run_and_recorded_in_the_run_metadata(indexed: Settings) -> None:
    sp = _run(indexed, "Compare the migration routes of arctic terns and barn swallows in depth.")
    plan, retrieval = sp.extras.retrieval.plan, sp.extras.retrieval
    assert plan.source == "rules" and plan.strategy == "EXPLORATORY"  # chosen by the plan, not forced
    assert retrieval.attempts[0].strategy == "EXPLORATORY"
    assert retrieval.attempts[0].confidence < indexed.retrieval.confidence.low
    tried = [a.strategy for a in retrieval.attempts]
    assert tried == ["EXPLORATORY", *indexed.retrieval.confidence.rerun_strategies]
    assert retrieval.confidence == max(a.confidence for a in retrieval.attempts)  # the better attempt is used
    assert sp.run_metadata.retrieval.attempts == tried
