"""The surfaces are thin: the CLI and the GUI reach projects, documents and run options only through the
Workspace and the RunSession, which refuse bad input with a typed error and lose nothing."""

from __future__ import annotations

import pytest

from ragstream.app.cli import build_parser
from ragstream.app.cli.run import run_options
from ragstream.app.session import RunSession
from ragstream.app.workspace import Workspace
from ragstream.errors import InputError, ProjectError
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.settings import Settings
from ragstream.stages.options import RunOptions

AWS_KEY = "AKIA" + "Q3EGQ4ZJX7VN2B5T"  # shaped like a key, split so no scanner flags this file


def _session(settings: Settings) -> RunSession:
    return RunSession(Workspace(settings), checkpointer=memory_checkpointer())


def test_an_uploaded_document_lands_in_the_project_and_its_overview_lists_it(settings: Settings) -> None:
    ctl = Workspace(settings)
    assert ctl.create_project(" notes ") == "notes"
    saved = ctl.save_document("../../outside/guide.md", b"# Guide\nThe index is rebuilt nightly.\n", "notes")
    assert saved == settings.data_dir.resolve() / "doc_raw" / "notes" / "guide.md"  # only the name's last part
    ctl.save_document("keys.md", f"# Keys\naws_access_key_id = {AWS_KEY}\n".encode(), "notes")
    assert ctl.project_overview("notes") == {
        "project": "notes",
        "ingested": False,
        "files": [],
        "chunks": 0,
        "secrets": [],
    }
    stats = ctl.ingest_docs("notes")
    overview = ctl.project_overview("notes")
    assert overview["ingested"] and [f["file"] for f in overview["files"]] == ["guide.md", "keys.md"]
    assert overview["chunks"] == sum(f["chunks"] for f in overview["files"]) == stats.chunks_total
    assert [f["secrets"] for f in overview["files"]] == [0, 1]
    assert overview["secrets"] == ["keys.md:2: AWS Access Key (redacted)"]
    assert AWS_KEY not in str(ctl.projects())
    assert ctl.project_names() == ["notes"]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("evil\u202egnp.md", b"text", "control characters"),
        ("big.md", b"x" * 2_000_001, "larger than"),
    ],
)
def test_a_refused_upload_is_a_typed_error_and_writes_nothing(
    name: str, data: bytes, message: str, settings: Settings
) -> None:
    ctl = Workspace(
        settings.model_copy(update={"ingestion": settings.ingestion.model_copy(update={"max_file_bytes": 2_000_000})})
    )
    ctl.create_project("notes")
    with pytest.raises(InputError, match=message):
        ctl.save_document(name, data, "notes")
    assert list((settings.data_dir / "doc_raw" / "notes").iterdir()) == []


def test_documents_need_a_project(settings: Settings) -> None:
    with pytest.raises(ProjectError, match="select a project"):
        Workspace(settings).save_document("a.md", b"text", _session(settings).active_project)
    with pytest.raises(ProjectError, match="invalid project name"):
        Workspace(settings).create_project("../escape")
    assert not (settings.data_dir / "doc_raw").exists()


def test_the_cli_builds_its_run_options_from_its_arguments() -> None:
    args = build_parser().parse_args(
        ["run", "q", "--project", "docs", "--also", "code", "--skip", "rerank", "--history", "relevant", "--strict"]
    )
    assert run_options(args) == RunOptions(
        project="docs",
        projects=["code"],
        skip=["rerank"],
        history_profile="relevant",
        strict=True,
        pause_after="none",
    )
    review = build_parser().parse_args(["run", "q", "--review", "--send", "--web", "--strategy", "TEMPORAL"])
    assert run_options(review) == RunOptions(pause_after="a4", web_search=True, strategy="TEMPORAL", send=False)


def test_the_session_builds_run_options_from_its_keywords_and_refuses_unknown_ones(indexed: Settings) -> None:
    ctl = _session(indexed)
    ctl.select_project("demo")
    with pytest.raises(InputError, match=r"unknown run context keys \['pause'\]"):
        ctl.run_full_pipeline("# Task\nHow are chunks fenced?", pause="none")
    assert ctl.current().state.stage.value == "raw" and ctl.options == RunOptions()
    sp = ctl.run_full_pipeline("# Task\nHow are chunks fenced?", RunOptions(pause_after="none"), skip=["rerank"]).state
    ran = {e["stage"] for e in ctl.trace() if e.get("event") == "stage_start"}
    assert sp.stage.value == "built" and "retrieval" in ran and "rerank" not in ran
    assert ctl.options == RunOptions(pause_after="none", skip=["rerank"])  # the session's options now


def test_run_options_given_as_a_mapping_run_and_anything_else_is_an_input_error_that_changes_nothing(
    indexed: Settings,
) -> None:
    """`run_full_pipeline(text, {"pause_after": "none"})` as a Python caller writes it."""
    ctl = _session(indexed)
    ctl.select_project("demo")
    for bad, message in (
        (["pause_after", "none"], "must be an object with keys"),
        ("none", "must be an object with keys"),
        ({1: "none"}, "must be an object with keys"),
        ({"pause": "none"}, r"unknown run context keys \['pause'\]"),
        ({"pause_after": "never"}, "pause_after"),
    ):
        with pytest.raises(InputError, match=message):
            ctl.run_full_pipeline("# Task\nHow are chunks fenced?", bad)  # type: ignore[arg-type]
        assert ctl.current().state.stage.value == "raw" and ctl.options == RunOptions()
        assert not [e for e in ctl.trace() if e.get("event") == "stage_start"]  # only the refusal is recorded
    done = ctl.run_full_pipeline("# Task\nHow are chunks fenced?", {"pause_after": "none"})
    assert done.state.stage.value == "built" and done.waiting is None and done.paused_before == []
    assert ctl.options == RunOptions(pause_after="none")
