"""A weak model behind the `openai` provider: every LLM stage mends, re-asks once, or falls back, and says so.

The model is the small OpenAI-protocol server (tests/openai_server.py) scripted per agent to misbehave
the way small instruct models do: prose around JSON, values outside the enum, empty or cut-off replies,
keys the schema does not have, chunk ids that were never given, dropping every passage.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

import pytest

from ragstream.app.controller import AppController
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.services import Services
from ragstream.stages import Stage
from ragstream.state import SuperPrompt
from tests.openai_server import FakeOpenAIServer, Reply, completion, schema_responder

PROMPT = "# Task\nHow are changed documents re-embedded?\n# Format\nA short numbered list, then one paragraph"
CHUNK_ID = re.compile(r"^excerpts = (.*)$", re.MULTILINE)


def agent_of(request: dict[str, Any]) -> str:
    return request.get("response_format", {}).get("json_schema", {}).get("name", "")


def given_ids(request: dict[str, Any]) -> list[str]:
    found = CHUNK_ID.search(request["messages"][1]["content"])
    return list(json.loads(found.group(1))) if found else []


class WeakModel:
    """Per agent, a list of replies used in turn (the last one repeats); other agents get a valid minimal reply."""

    def __init__(self, scripts: dict[str, list[Callable[[dict[str, Any]], str]]]) -> None:
        self.scripts = scripts
        self.used: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str:
        if request.get("stream"):
            return "A streamed answer citing [x]."
        name = agent_of(request)
        with self.lock:
            script = self.scripts.get(name)
            if not script:
                return schema_responder(request)
            i = self.used.get(name, 0)
            self.used[name] = i + 1
        return script[min(i, len(script) - 1)](request)


def run_to(stage: Stage, settings, model: WeakModel, server: FakeOpenAIServer, prompt: str = PROMPT) -> SuperPrompt:
    server.responder = model
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=Services(settings))
    ctl.select_project("demo")
    sp = ctl.run_full_pipeline(prompt, pause_after="none")
    assert sp.stage is Stage.BUILD
    return sp


def test_a3_dropping_every_relevant_candidate_is_overruled_by_a_stated_rule(openai_on_indexed) -> None:
    server, settings = openai_on_indexed()
    drop = lambda r: json.dumps({"decision": "drop_irrelevant", "reason": "The passage talks about something else."})  # noqa: E731
    sp = run_to(Stage.BUILD, settings, WeakModel({"A3_v1": [drop]}), server)
    report = sp.extras.a3
    assert "the model dropped all" in report.overruled and "rule: those are kept" in report.overruled
    kept = [cid for cid, d in report.decisions.items() if d.decision == "keep"]
    assert kept and all(
        "kept by rule (model: The passage talks about something else." in report.decisions[c].reason for c in kept
    )
    assert sp.final_selection_ids and set(sp.final_selection_ids) <= set(kept)
    assert any(f'chunk="{cid}"' in sp.prompt_ready for cid in kept)  # the grounding reaches the prompt, fenced


def test_a3_overrules_the_models_irrelevant_only_for_strong_evidence_unless_it_names_a_conflict(
    openai_on_indexed,
) -> None:
    """The offline evidence keeps architecture.md strongly (evidence over gate.strong_evidence) and ingestion.md
    weakly; the model calls both irrelevant and keeps another: only the strong one is kept against it."""
    server, settings = openai_on_indexed()
    prompt = (
        "# Task\nExplain how RAGstream decides which document chunks reach the final prompt, and what a person "
        "can change before it is sent."
    )

    def a3(request: dict[str, Any]) -> str:
        passage = request["messages"][1]["content"].split("passage = ", 1)[1]
        if "checkpointer" in passage or "re-embed" in passage:
            return json.dumps({"decision": "drop_irrelevant", "reason": "Not about the question."})
        return json.dumps({"decision": "keep", "reason": "Mentions documents."})

    sp = run_to(Stage.BUILD, settings, WeakModel({"A3_v1": [a3]}), server, prompt)
    report = sp.extras.a3
    assert "with strong offline evidence for the ask, irrelevant; rule: a candidate with strong evidence is kept" in (
        report.overruled
    )
    (overruled,) = [cid for cid, d in report.decisions.items() if d.reason.startswith("kept by rule")]
    assert overruled.startswith("architecture.md@") and overruled in sp.final_selection_ids
    weak = [cid for cid in report.decisions if cid.startswith("ingestion.md@")]
    assert weak and report.decisions[weak[0]].decision == "drop_irrelevant"  # weak evidence never outvotes the model
    assert weak[0] not in sp.final_selection_ids

    server.requests.clear()

    def conflict(request: dict[str, Any]) -> str:
        passage = request["messages"][1]["content"].split("passage = ", 1)[1]
        if "checkpointer" in passage:
            return json.dumps({"decision": "drop_conflict", "reason": "Contradicts the ask."})
        return json.dumps({"decision": "keep", "reason": "Mentions documents."})

    sp = run_to(Stage.BUILD, settings, WeakModel({"A3_v1": [conflict]}), server, prompt)
    assert sp.extras.a3.overruled == ""  # a conflict the model names stands, however strong the evidence
    assert not any(cid.startswith("architecture.md@") for cid in sp.final_selection_ids)

    server.requests.clear()
    every = lambda r: json.dumps({"decision": "drop_conflict", "reason": "Contradicts the ask."})  # noqa: E731
    sp = run_to(Stage.BUILD, settings, WeakModel({"A3_v1": [every]}), server)
    assert "dropped all" in sp.extras.a3.overruled  # every relevant one dropped: kept by the first rule


def test_a3_records_the_models_reason_and_mends_or_falls_back_per_candidate(openai_on_indexed) -> None:
    server, settings = openai_on_indexed()

    def a3(request: dict[str, Any]) -> str:
        reasked = len(request["messages"]) > 2
        if not reasked:
            return "Keep."  # no JSON at all: re-asked
        if "re-embed" in request["messages"][1]["content"].split("passage = ", 1)[1]:
            return "Keep."  # the same again: this passage takes the offline decision
        return '```json\n{"decision": "KEEP", "reason": "It names changed documents."}\n```'

    sp = run_to(Stage.BUILD, settings, WeakModel({"A3_v1": [a3]}), server)
    report = sp.extras.a3
    assert report.llm.fell_back >= 1 and any("offline evidence:" in d.reason for d in report.decisions.values())
    assert any("'KEEP' read as 'keep'" in note for note in report.llm.notes)
    reasons = [d.reason for d in report.decisions.values() if d.decision != "drop_duplicate"]
    assert any(r.startswith("It names changed documents. (openai:gpt-4.1-mini)") for r in reasons)
    assert not any(r.startswith("openai:") for r in reasons)  # a decision's reason is never just the model's name


def test_a4_cites_only_given_chunks_and_falls_back_when_no_line_rests_on_one(openai_on_indexed) -> None:
    server, settings = openai_on_indexed()

    def hallucinating(request: dict[str, Any]) -> str:
        ids = given_ids(request)
        holds = next(i for i in ids if i.startswith("ingestion.md@"))  # the excerpt that says it
        return json.dumps(
            {
                "facts": [
                    f"Changed files are re-embedded on ingest. [{holds}] [made/up.md@0000000000#9]",
                    "The moon is made of cheese. [made/up.md@0000000000#9]",
                ],
                "constraints": [],
                "open_issues": [],
            }
        )

    sp = run_to(Stage.BUILD, settings, WeakModel({"A4_v1": [hallucinating]}), server)
    a4_requests = [r for r in server.requests if agent_of(r) == "A4_v1"]
    given = set(given_ids(a4_requests[0]))
    cited = set(re.findall(r"\[([^\[\]]+@[0-9a-f]{10}#\d+)\]", sp.S_CTX_MD))
    assert cited and cited <= given and "made/up.md" not in sp.S_CTX_MD
    assert [line.split(" [")[0] for line in sp.extras.a4.unsupported_lines] == ["The moon is made of cheese."], (
        sp.extras.a4
    )
    assert sp.extras.a4.llm.valid == 1

    server.requests.clear()

    def nothing(r: dict) -> str:
        return json.dumps(
            {"facts": ["Unrelated claim. [made/up.md@0000000000#9]"], "constraints": [], "open_issues": []}
        )

    sp = run_to(Stage.BUILD, settings, WeakModel({"A4_v1": [nothing]}), server)
    assert (
        sp.extras.a4.llm.fell_back == 1
        and "none of the model's 1 lines rests on an excerpt" in sp.extras.a4.llm.notes[0]
    )
    assert (
        sp.extras.a4.agent == "offline extraction (no model)"
        and "- none found" not in sp.S_CTX_MD.split("### Constraints")[0]
    )


def test_a4_is_not_called_without_excerpts(openai_on_indexed) -> None:
    from ragstream.agents.a4_condenser import condense
    from ragstream.agents.a4_support import SupportCheck

    server, settings = openai_on_indexed()
    services = Services(settings)
    check = SupportCheck(settings.condenser.support, services.embedder.embed_together)
    text, kept, report = condense("ask", [], services.runner, services.budget, lambda why: pytest.fail(why), check)
    assert (kept, report.agent) == ([], "not called: no excerpts to condense") and not server.requests
    assert text.count("- none found in the selected excerpts") == 3


def test_a4_invalid_twice_falls_back_and_a_cut_off_reply_is_re_asked_shorter(openai_on_indexed) -> None:
    server, settings = openai_on_indexed()
    wrong_keys = lambda r: json.dumps({"statements": ["x"]})  # noqa: E731
    sp = run_to(Stage.BUILD, settings, WeakModel({"A4_v1": [wrong_keys]}), server)
    assert sp.extras.a4.llm.fell_back == 1 and "'facts' is a required property" in sp.extras.a4.llm.notes[0]
    assert sp.extras.a4.agent == "offline extraction (no model)"

    server.requests.clear()
    cut = Reply(
        raw_body=json.dumps(
            {
                **completion("gpt-4.1-mini", '{"grounded": "yes", "complete": "y'),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": '{"facts": ["Chang'},
                        "finish_reason": "length",
                    }
                ],
            }
        )
    )
    server.fault = lambda r: cut if agent_of(r) == "A4_v1" and len(r["messages"]) == 2 else None
    sp = run_to(Stage.BUILD, settings, WeakModel({}), server)
    retry = [r for r in server.requests if agent_of(r) == "A4_v1"][1]
    assert "cut off at the 700-token limit; answer much shorter" in retry["messages"][-1]["content"]
    assert sp.extras.a4.llm.fell_back == 1 or sp.extras.a4.llm.repaired == 1


def test_a5_kind_the_format_does_not_name_adds_no_rule_and_a_guessed_depth_no_length(openai_on_indexed) -> None:
    server, settings = openai_on_indexed()

    def markdown(r: dict) -> str:
        return json.dumps({"kind": "markdown", "sections": ["Overview"], "reason": "structured answer"})

    def depth(r: dict) -> str:
        return json.dumps(
            {
                "system": "unknown",
                "audience": "Developer",
                "tone": "unknown",
                "response_depth": "short",
                "confidence": "high",
                "reasons": {
                    "system": "",
                    "audience": "Developer",
                    "tone": "",
                    "response_depth": "changed documents",
                    "confidence": "",
                },
            }
        )

    sp = run_to(Stage.BUILD, settings, WeakModel({"A5_v1": [markdown], "A2_v1": [depth]}), server)
    assert sp.body.audience is None  # the reason only repeats the label
    assert sp.body.depth == "short"  # the reason quotes the prompt ...
    a5 = sp.extras.a5
    assert "under 150 words" not in " ".join(a5.rules)  # ... but the user's format wins over a length rule
    assert a5.kind == "unknown" and "Use a heading per section." not in a5.rules and a5.sections == []
    assert "not applied: no word of the requested format names it" in a5.source
    assert "A short numbered list, then one paragraph" in sp.prompt_ready


def test_a_critic_without_a_valid_verdict_leaves_the_answer_unjudged(openai_on_indexed) -> None:
    server, settings = openai_on_indexed()
    server.responder = WeakModel({"CRITIC_v1": [lambda r: ""]})
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=Services(settings))
    ctl.select_project("demo")
    sp = ctl.run_full_pipeline("# Task\nHow are changed documents re-embedded?", pause_after="none", send=True)
    assert sp.answer is not None and sp.answer.done and sp.answer.text == "A streamed answer citing [x]."
    assert (
        "the critic's reply was invalid: your reply was empty; after one re-ask: your reply was empty"
        in sp.answer.attempts[-1].critique["not_judged"]
    )
    assert len([r for r in server.requests if r.get("stream")]) == 1  # no regeneration on a missing verdict


def test_a_server_down_is_one_line_naming_the_url_and_the_next_run_works(
    indexed, tmp_path, monkeypatch, capsys
) -> None:
    from ragstream.app.cli import main
    from ragstream.settings import load_settings
    from tests.servers import free_port, link_indexed_project

    settings = load_settings(overrides={"data_dir": str(tmp_path / "data"), "llm.provider": "local"})
    link_indexed_project(settings, indexed)
    prompt = tmp_path / "prompt.md"
    prompt.write_text("# Task\nHow are changed documents re-embedded?\n", encoding="utf-8")
    url = f"http://127.0.0.1:{free_port()}/v1"
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    args = ["run", "--file", str(prompt), "--project", "demo"]
    assert main(args) == 2
    problems = [line for line in capsys.readouterr().err.splitlines() if not line.startswith(("> ", "  done "))]
    assert len(problems) == 1 and problems[0].startswith("error: ") and f"cannot connect to {url}" in problems[0]
    with FakeOpenAIServer() as server:
        server.responder = schema_responder
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        assert main(args) == 0


def test_with_a_model_the_prompt_still_names_the_half_of_the_ask_the_documents_do_not_cover(openai_on_indexed) -> None:
    """A model keeping a candidate is no evidence that every part of the ask is answered."""
    server, settings = openai_on_indexed()

    def keep(r: dict) -> str:
        return json.dumps({"decision": "keep", "reason": "Relevant."})

    prompt = "# Task\nHow does RAGstream rate-limit requests to Kubernetes, and how are changed documents re-embedded?"
    sp = run_to(Stage.BUILD, settings, WeakModel({"A3_v1": [keep]}), server, prompt)
    assert any("Kubernetes" in part for part in sp.extras.a3.uncovered)
    assert "The documents do not cover: How does RAGstream rate-limit requests to Kubernetes" in sp.prompt_ready
    assert "re-embedded" not in " ".join(sp.extras.a3.uncovered)
