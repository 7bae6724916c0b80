"""The Streamlit GUI through Streamlit's AppTest: manual run, run all with review, gating, ingest."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ragstream.settings import Settings
from ragstream.stages import Stage
from tests.fixtures_docs import SAMPLE

APP = Path(__file__).resolve().parents[1] / "ragstream" / "app" / "ui_streamlit.py"
PROMPT = (Path(__file__).resolve().parents[1] / "examples" / "prompt.md").read_text(encoding="utf-8")
STAGES = ["preprocess", "a2", "retrieval", "rerank", "a3", "a4", "a5", "build"]


def _app(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("RAGSTREAM_LLM_PROVIDER", "local")
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.run()
    assert not at.exception
    return at


def _button(at: AppTest, key: str):
    return next(b for b in at.button if b.key == key)


def _prompt_view(at: AppTest) -> str:
    return at.code[0].value


def test_full_manual_run(indexed: Settings, monkeypatch) -> None:
    at = _app(indexed.data_dir, monkeypatch)
    at.text_area(key="prompt").input(PROMPT).run()
    for stage in STAGES:
        _button(at, f"stage_{stage}").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any(s.value == f"SuperPrompt - stage: {Stage(stage).value}" for s in at.subheader)
    ctl = at.session_state["session"]
    assert ctl.current().state.stage.value == "built"
    assert _prompt_view(at) == ctl.current().state.prompt_ready.rstrip("\n")
    assert '~~~~excerpt source="' in _prompt_view(at)
    assert at.get("download_button")


def test_run_all_pauses_for_review_and_the_edit_reaches_the_prompt(indexed: Settings, monkeypatch) -> None:
    at = _app(indexed.data_dir, monkeypatch)
    at.text_area(key="prompt").input(PROMPT).run()
    _button(at, "run_all").click().run()
    ctl = at.session_state["session"]
    assert ctl.current().state.stage.value == "a4" and ctl.current().paused_before == ["review"]
    assert not _button(at, "continue").disabled
    original = ctl.current().state.s_ctx_md
    at.text_area(key="sctx_edit").input("### Facts\n- EDITED IN THE GUI").run()
    _button(at, "continue").click().run()
    assert not at.exception
    assert ctl.current().state.stage.value == "built"
    assert "EDITED IN THE GUI" in _prompt_view(at) and original not in _prompt_view(at)


def test_the_review_form_unticks_a_chunk_and_sets_a_label(indexed: Settings, monkeypatch) -> None:
    at = _app(indexed.data_dir, monkeypatch)
    at.text_area(key="prompt").input(PROMPT).run()
    _button(at, "run_all").click().run()
    ctl = at.session_state["session"]
    chunks = ctl.current().waiting["chunks"]
    boxes = [at.checkbox(key=f"keep_{c['id']}") for c in chunks]
    assert boxes and all(
        box.value for box in boxes
    )  # the demo prompt keeps one chunk since A3's absolute evidence (issue 24)
    dropped = chunks[0]["id"]
    at.checkbox(key=f"keep_{dropped}").uncheck().run()
    tone = at.selectbox(key="label_tone")
    assert "formal" in tone.options
    tone.select("formal").run()
    _button(at, "continue").click().run()
    assert not at.exception and ctl.current().state.stage.value == "built"
    final = _prompt_view(at)
    assert f'chunk="{dropped}"' not in final and final.count("excerpt source=") == len(chunks) - 1
    assert "- Tone: formal" in final and ctl.current().waiting is None


def test_strict_toggle_asks_about_an_unknown_header_and_the_choice_applies(indexed: Settings, monkeypatch) -> None:
    at = _app(indexed.data_dir, monkeypatch)
    at.toggle(key="strict").set_value(True).run()
    header = f"Gizmo {uuid.uuid4().hex[:6]}"
    at.text_area(key="prompt").input(f"# Task\nHow are chunks fenced?\n# {header}\nQUUXLINE tildes.\n").run()
    _button(at, "run_all").click().run()
    ctl = at.session_state["session"]
    assert ctl.current().waiting["kind"] == "headers" and ctl.current().state.stage.value == "preprocessed"
    at.selectbox(key="decide_0").select("CONTEXT").run()
    _button(at, "decide").click().run()
    assert not at.exception and ctl.current().waiting["kind"] == "review"  # decided, the run went on to the review
    assert "## Context\nQUUXLINE" in ctl.current().state.prompt_ready


def test_illegal_stage_buttons_are_disabled_and_the_session_still_refuses(indexed: Settings, monkeypatch) -> None:
    at = _app(indexed.data_dir, monkeypatch)
    assert _button(at, "stage_preprocess").disabled  # no prompt yet
    at.text_area(key="prompt").input(PROMPT).run()
    assert not _button(at, "stage_preprocess").disabled
    for stage in STAGES[1:]:
        assert _button(at, f"stage_{stage}").disabled
    _button(at, "stage_preprocess").click().run()
    assert not _button(at, "stage_a2").disabled and not _button(at, "stage_retrieval").disabled
    assert _button(at, "stage_a4").disabled and _button(at, "continue").disabled
    ctl = at.session_state["session"]
    with pytest.raises(Exception, match="cannot run now"):
        ctl.run_a4()  # the gate is the session's, not only the button's
    at.run()
    assert "cannot run now" in at.error[0].value  # last_error is shown plainly


def test_create_project_upload_and_ingest(tmp_path: Path, monkeypatch) -> None:
    at = _app(tmp_path / "data", monkeypatch)
    at.text_input(key="new_project").input("../escape").run()
    _button(at, "create_project").click().run()
    assert "invalid project name" in at.error[0].value
    at.text_input(key="new_project").input("notes").run()
    _button(at, "create_project").click().run()
    raw = tmp_path / "data" / "doc_raw" / "notes"
    assert raw.is_dir()
    for source in SAMPLE.glob("*.md"):
        (raw / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    (raw / "blob.txt").write_bytes(b"\x00\x01")
    _button(at, "ingest").click().run()
    assert not at.exception
    assert any("3 added" in s.value for s in at.success)
    assert any("skipped blob.txt: binary file" in c.value for c in at.caption)
    files = at.dataframe[0].value
    assert sorted(files["file"]) == ["architecture.md", "ingestion.md", "retrieval.md"]
    assert (files["chunks"] >= 1).all()


def test_send_shows_the_streamed_answer_and_the_verdict(openai_on_indexed, monkeypatch) -> None:
    from tests.test_answer import Model

    server, settings = openai_on_indexed(**{"send.critic_max_retries": 2})
    server.responder = Model()
    monkeypatch.setenv("RAGSTREAM_LLM_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local-server-0000")
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(settings.data_dir))
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.run()
    at.text_area(key="prompt").input("# Task\nHow are changed documents re-embedded?").run()
    _button(at, "run_all").click().run()
    _button(at, "continue").click().run()
    assert not _button(at, "send").disabled
    _button(at, "send").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(s.value == "Answer" for s in at.subheader)
    assert any("Second draft" in m.value for m in at.markdown)
    assert any("accepted by the critic after 1 regeneration" in c.value for c in at.caption)


def test_send_is_disabled_offline(indexed: Settings, monkeypatch) -> None:
    at = _app(indexed.data_dir, monkeypatch)
    at.text_area(key="prompt").input(PROMPT).run()
    _button(at, "run_all").click().run()
    _button(at, "continue").click().run()
    assert _button(at, "send").disabled


def test_an_off_button_says_why_it_is_off(indexed: Settings, monkeypatch) -> None:
    at = _app(indexed.data_dir, monkeypatch)
    assert any("Type a prompt above" in c.value for c in at.caption)
    assert {_button(at, f"stage_{stage}").proto.help for stage in STAGES} == {"Type a prompt first."}
    at.text_area(key="prompt").input(PROMPT).run()
    _button(at, "stage_preprocess").click().run()
    assert not any("Type a prompt above" in c.value for c in at.caption)
    assert _button(at, "stage_a2").proto.help == ""  # enabled: no excuse
    assert _button(at, "stage_a4").proto.help == "Runs in order: next is A2 PromptShaper."


def test_the_project_selector_starts_on_the_project_changed_last(tmp_path: Path, monkeypatch) -> None:
    data = tmp_path / "data"
    for name, when in (("alpha", 1_000_000), ("zeta", 2_000_000), ("mid", 1_500_000)):  # last changed: not first
        folder = data / "doc_raw" / name
        folder.mkdir(parents=True)
        os.utime(folder, (when, when))
    at = _app(data, monkeypatch)
    assert at.selectbox(key="project").value == "zeta"
    assert at.selectbox(key="project").options == ["alpha", "mid", "zeta"]


def test_run_details_are_separate_items_and_stage_times_keep_run_order(indexed: Settings, monkeypatch) -> None:
    at = _app(indexed.data_dir, monkeypatch)
    at.text_area(key="prompt").input(PROMPT).run()
    _button(at, "run_all").click().run()
    details = next(c.value for c in at.caption if c.value.startswith("- plan"))
    assert all(line.startswith("- ") for line in details.splitlines()) and len(details.splitlines()) >= 3
    charts = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    stage_chart = next(spec for spec in charts if "stage" in json.dumps(spec["encoding"]["x"]))
    assert stage_chart["encoding"]["x"]["sort"] is None  # the bars stand as the stages ran, not alphabetically
