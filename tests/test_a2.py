"""A2 PromptShaper as a stage: labels with reasons, the user's own values kept, nothing set without basis."""

from __future__ import annotations

import json

import pytest

from ragstream.services import Services
from ragstream.settings import Settings
from ragstream.state import Chunk, Span, Stage
from tests.helpers import preprocessed, run_stage
from tests.openai_server import FakeOpenAIServer, Reply

REASONS = {
    "system": "churn models",
    "audience": "board",
    "tone": "none",
    "response_depth": "compare",
    "confidence": "vague",
}
LABELS = {
    "system": "Data_Scientist",
    "audience": "Manager",
    "tone": "formal",
    "response_depth": "exhaustive",
    "confidence": "low",
    "reasons": REASONS,
}


def _preprocessed(settings: Settings, prompt: str):
    services = Services(settings)
    return services, preprocessed(prompt, services)


def test_a2_fills_body_with_stated_labels_and_records_the_evidence(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    services, sp = _preprocessed(
        openai_settings,
        "# Task\nAct as a data scientist and compare churn models in a formal tone.\n# Audience\nthe board",
    )
    openai_server.push(Reply(content=json.dumps(LABELS)))
    out = run_stage(sp, "a2", services)
    assert out.stage is Stage.A2 and out.history_of_stages == [Stage.PREPROCESS, Stage.A2]
    assert out.body.system == "You are an expert Data Scientist."
    assert out.body.audience == "the board"  # the user's own header wins
    assert (out.body.tone, out.body.depth) == ("formal", None)
    decisions = out.extras.a2.decisions
    assert decisions["system"] == "stated by 'act as a data scientist' in task"
    assert decisions["tone"] == "stated by 'in a formal tone' in task"
    # no words state a depth: the model's "exhaustive" (its reason "compare" quotes only the topic) is dropped
    assert (
        decisions["response_depth"]
        == "unset: the model chose exhaustive, but no words of the prompt state the response depth"
    )
    assert out.body.confidence is None  # an assessment, not a requirement the user gave
    assert decisions["audience"] == "kept_user_value"
    assert out.extras.a2.labels["confidence"] == "low" and out.extras.a2.reasons == REASONS
    assert out.extras.a2.usage.model_dump() == {"input_tokens": 11, "output_tokens": 7}
    assert "## System\nYou are an expert Data Scientist." in out.prompt_ready
    assert "Depth" not in out.prompt_ready and "Confidence" not in out.prompt_ready
    assert json.loads(
        openai_server.requests[0]["messages"][1]["content"].split("<<<INPUT\n")[1].split("\n")[0].split(" = ", 1)[1]
    ).startswith("Act as a data scientist")


def test_a2_drops_labels_and_a_role_the_model_gives_on_a_topic_word(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    """Issue 40: the model labelled every prompt alike ("You are an expert Software Architect.", "Audience:
    Developer", "Depth: detailed"), with reasons that restate the topic; no words of the prompt state them."""
    services, sp = _preprocessed(
        openai_settings, "How should researchers name their data files so others can find them?"
    )
    invented = {
        "system": "Software_Architect",
        "audience": "Researcher",
        "tone": "unknown",
        "response_depth": "detailed",
        "confidence": "high",
        "reasons": {
            "system": "name their data files",
            "audience": "researchers name their data files",
            "tone": "",
            "response_depth": "how should researchers name their data files",
            "confidence": "clear question",
        },
    }
    openai_server.push(Reply(content=json.dumps(invented)))
    out = run_stage(sp, "a2", services)
    assert (out.body.system, out.body.audience, out.body.tone, out.body.depth) == (None,) * 4
    decisions = out.extras.a2.decisions
    assert (
        decisions["system"] == "unset: the model chose Software_Architect, but no words of the prompt state the system"
    )
    assert decisions["audience"] == "unset: the model chose Researcher, but no words of the prompt state the audience"
    assert out.extras.a2.labels["audience"] == "Researcher"  # what the model said stays on record
    assert "You are an expert" not in out.prompt_ready and "Researcher" not in out.prompt_ready
    assert "Depth" not in out.prompt_ready


def test_a2_a_stated_label_stands_against_the_model(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    services, sp = _preprocessed(openai_settings, "# Task\nBriefly explain to new developers how the cache is pruned.")
    openai_server.push(Reply(content=json.dumps({**LABELS, "audience": "Manager", "response_depth": "detailed"})))
    out = run_stage(sp, "a2", services)
    assert (out.body.audience, out.body.depth) == ("Developer", "short")
    assert out.extras.a2.decisions["audience"] == (
        "the model chose Manager; 'to new developers' in task states Developer, which stands"
    )


def test_a2_unknown_leaves_the_label_unset(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    services, sp = _preprocessed(openai_settings, "# Task\nCompare churn models")
    openai_server.push(Reply(content=json.dumps({**LABELS, "audience": "unknown", "tone": "unknown"})))
    out = run_stage(sp, "a2", services)
    assert out.body.audience is None and out.body.tone is None
    assert out.extras.a2.decisions["audience"].startswith("unset")
    assert "Audience" not in out.prompt_ready


def test_a2_rerun_after_later_stages_keeps_retrieval(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    services, sp = _preprocessed(openai_settings, "# Task\nCompare churn models")
    chunk = Chunk(id="c1", source_path="a.md", sha256="x", chunk_index=0, text="t", span=Span(start=0, end=1))
    later = sp.model_copy(
        update={
            "stage": Stage.A4,
            "history_of_stages": [Stage.PREPROCESS, Stage.RETRIEVAL, Stage.RERANK, Stage.A3, Stage.A4],
            "base_context_chunks": [chunk],
            "views_by_stage": {"retrieval": ["c1"], "reranked": ["c1"], "a3": ["c1"], "a4": ["c1"]},
            "final_selection_ids": ["c1"],
            "s_ctx_md": "- fact [c1]",
        }
    )
    openai_server.push(Reply(content=json.dumps(LABELS)))
    out = run_stage(later, "a2", services)
    assert out.stage is Stage.A4  # the frontier: retrieval through A4 stay valid, only A5 and the build read labels
    assert out.history_of_stages[-1] is Stage.A2
    for name in ("base_context_chunks", "views_by_stage", "final_selection_ids", "s_ctx_md"):
        assert getattr(out, name) == getattr(later, name)


def test_a2_broken_reply_is_re_asked_once_then_falls_back_to_the_keyword_rules(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    services, sp = _preprocessed(openai_settings, "# Task\nCompare churn models in Python. Be concise.")
    openai_server.push(Reply(content="I think the system should be a data scientist."), Reply(content=""))
    out = run_stage(sp, "a2", services)
    assert len(openai_server.requests) == 2  # one re-ask, carrying the problem
    assert (
        "not valid: agent A2/v1: output: no JSON object in the reply"
        in openai_server.requests[1]["messages"][-1]["content"]
    )
    report = out.extras.a2
    assert (report.llm.valid, report.llm.repaired, report.llm.fell_back) == (0, 0, 1)
    assert "after one re-ask: your reply was empty" in report.llm.notes[0]
    assert report.provider == "local" and out.body.tone == "direct"  # the 'concise' rule
    assert out.body.system is None  # a topic word ('Python') is no basis for a role


def test_a2_mends_an_enum_spelling_and_prose_around_the_json(
    openai_settings: Settings, openai_server: FakeOpenAIServer
) -> None:
    services, sp = _preprocessed(openai_settings, "# Task\nAnswer as a data scientist: compare churn models")
    mended = {**LABELS, "system": "data scientist", "tone": "Unknown"}
    openai_server.push(Reply(content="Here are the labels:\n```json\n" + json.dumps(mended) + "\n```"))
    out = run_stage(sp, "a2", services)
    assert len(openai_server.requests) == 1
    assert out.body.system == "You are an expert Data Scientist."
    report = out.extras.a2.llm
    assert (report.valid, report.repaired, report.fell_back) == (0, 1, 0)
    assert "system: 'data scientist' read as 'Data_Scientist'" in report.notes
    assert "the JSON object was taken from the text around it" in report.notes


def test_a2_offline_sets_a_label_only_on_a_keyword_rule(settings: Settings) -> None:
    services, sp = _preprocessed(
        settings, "# Task\nWrite a Python function that parses CSV files, with pytest tests. Be concise."
    )
    out = run_stage(sp, "a2", services)
    report = out.extras.a2
    assert report.provider == "local" and report.labels["tone"] == "direct"
    assert report.reasons["tone"] == "'be concise' in task"
    assert report.decisions["tone"] == "stated by 'be concise' in task"
    assert out.body.tone == "direct"
    # a topic word ('Python', 'pytest') is no basis for a role: none is set
    assert (out.body.system, out.body.audience, out.body.depth) == (None, None, None)
    assert report.reasons["system"] == "no words of the prompt state it"


@pytest.mark.parametrize(
    ("task", "stated"),
    [
        ("How should researchers name their files?", {}),
        ("Where are the detailed logs kept, and what is a formal grammar?", {}),
        ("What tools for developers exist in Python?", {}),
        ("Explain the cache to new developers.", {"audience": "Developer"}),
        ("Summarize the outage for managers and stakeholders.", {"audience": "Manager"}),
        (
            "Write it for a non-technical audience, in a friendly tone.",
            {"audience": "Non-technical", "tone": "friendly"},
        ),
        ("Give me a detailed explanation of retries.", {"depth": "detailed"}),
        ("Walk me through it step by step, client side and server side.", {}),  # an order, not a depth
        ("In one sentence: what is a lockfile?", {"depth": "short"}),
        ("Explain like I'm five how DNS works.", {"system": "You are an expert Teacher."}),
    ],
)
def test_a2_offline_labels_only_from_words_that_state_them(settings: Settings, task: str, stated: dict) -> None:
    """Issue 36 deliverable 4: a label from stating words ("for managers", "in a friendly tone"), never a topic word."""
    services, sp = _preprocessed(settings, f"# Task\n{task}")
    body = run_stage(sp, "a2", services).body
    labels = {"system": body.system, "audience": body.audience, "tone": body.tone, "depth": body.depth}
    assert {k: v for k, v in labels.items() if v} == stated


def test_a2_keeps_the_role_the_user_wrote_verbatim(settings: Settings) -> None:
    services, sp = _preprocessed(
        settings, "You are a senior backend engineer reviewing our auth code.\nWhere are tokens checked?"
    )
    out = run_stage(sp, "a2", services)
    assert out.body.system == "You are a senior backend engineer reviewing our auth code."
    assert out.body.task == "Where are tokens checked?"
    assert out.extras.a2.decisions["system"] == "kept_user_value"
    assert out.prompt_ready.count("senior backend engineer") == 1


def test_a2_offline_asserts_nothing_for_a_plain_question(settings: Settings) -> None:
    services, sp = _preprocessed(settings, "What is the capital of France?")
    out = run_stage(sp, "a2", services)
    assert (out.body.system, out.body.audience, out.body.tone, out.body.depth, out.body.confidence) == (None,) * 5
    assert "## System" not in out.prompt_ready and "Response requirements" not in out.prompt_ready
