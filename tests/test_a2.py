"""A2 PromptShaper as a stage: labels with reasons, the user's own values kept, nothing set without basis."""

from __future__ import annotations

import json

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


def test_a2_fills_body_and_records_reasons(openai_settings: Settings, openai_server: FakeOpenAIServer) -> None:
    services, sp = _preprocessed(openai_settings, "# Task\nCompare churn models\n# Audience\nthe board")
    openai_server.push(Reply(content=json.dumps(LABELS)))
    out = run_stage(sp, "a2", services)
    assert out.stage is Stage.A2 and out.history_of_stages == [Stage.PREPROCESS, Stage.A2]
    assert out.body.system == "You are an expert Data Scientist."
    assert out.body.audience == "the board"  # the user's own header wins
    assert (out.body.tone, out.body.depth) == (
        None,
        "exhaustive",
    )  # "none" quotes nothing of the prompt; "compare" does
    assert (
        out.extras.a2.decisions["tone"] == "unset: the model chose formal but its reason quotes nothing from the prompt"
    )
    assert out.body.confidence is None  # an assessment, not a requirement the user gave
    assert out.extras.a2.decisions["audience"] == "kept_user_value"
    assert out.extras.a2.labels["confidence"] == "low" and out.extras.a2.reasons == REASONS
    assert out.extras.a2.usage.model_dump() == {"input_tokens": 11, "output_tokens": 7}
    assert "## System\nYou are an expert Data Scientist." in out.prompt_ready
    assert "Tone" not in out.prompt_ready and "Confidence" not in out.prompt_ready
    assert (
        json.loads(
            openai_server.requests[0]["messages"][1]["content"].split("<<<INPUT\n")[1].split("\n")[0].split(" = ", 1)[1]
        )
        == "Compare churn models"
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
            "S_CTX_MD": "- fact [c1]",
        }
    )
    openai_server.push(Reply(content=json.dumps(LABELS)))
    out = run_stage(later, "a2", services)
    assert out.stage is Stage.A4  # the frontier: retrieval through A4 stay valid, only A5 and the build read labels
    assert out.history_of_stages[-1] is Stage.A2
    for name in ("base_context_chunks", "views_by_stage", "final_selection_ids", "S_CTX_MD"):
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
    services, sp = _preprocessed(openai_settings, "# Task\nCompare churn models")
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
    assert report.reasons["tone"] == "'concise' in task"
    assert out.body.tone == "direct"
    # a topic word ('Python', 'pytest') is no basis for a role: none is set
    assert (out.body.system, out.body.audience, out.body.depth) == (None, None, None)
    assert report.reasons["system"] == "no keyword rule applies"


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
