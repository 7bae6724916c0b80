"""The `ragstream` console script as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # subprocesses, servers, browsers or kills


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ragstream", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_preprocess_prints_segment_table_and_prompt(tmp_path: Path) -> None:
    out = _run("preprocess", "# Task\nExplain RRF\n# System\nbe terse\n# Misc\nn", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "text1  TASK" in out.stdout
    assert "DROPPED_META" in out.stdout and "UNDECIDED" in out.stdout
    assert "=== prompt_ready ===" in out.stdout
    assert "## Task\nExplain RRF" in out.stdout


def test_preprocess_json_from_file(tmp_path: Path) -> None:
    prompt = tmp_path / "p.md"
    prompt.write_text("# Goal\nship it\n# Misc\nextra", encoding="utf-8")
    out = _run("preprocess", "--file", str(prompt), "--json", "--include-undecided", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    sp = json.loads(out.stdout)
    assert sp["stage"] == "preprocessed"
    assert sp["body"]["task"] == "ship it"
    assert [s["source_note"] for s in sp["preprocessing"]["segments"]] == ["KEPT_CONTENT", "KEPT_UNDECIDED"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("preprocess", "   "), "the prompt is empty"),
        (("preprocess", "--file", "missing.md"), "cannot read prompt file"),
    ],
)
def test_bad_input_is_a_clear_error(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    out = _run(*args, cwd=tmp_path)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_binary_prompt_file_is_rejected(tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x00")
    out = _run("preprocess", "--file", str(blob), cwd=tmp_path)
    assert out.returncode == 2
    assert "not UTF-8 text" in out.stderr


def test_agents_list_and_show(tmp_path: Path) -> None:
    listed = _run("agents", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "A2" in listed.stdout and "A00" in listed.stdout
    shown = _run("agents", "show", "A2", cwd=tmp_path)
    assert shown.returncode == 0 and "(valid)" in shown.stdout
    assert '"mode": "Chooser"' in shown.stdout
    missing = _run("agents", "show", "A9", cwd=tmp_path)
    assert missing.returncode == 2 and "no config for agent 'A9'" in missing.stderr


def test_a2_after_preprocess_through_a_pipe(tmp_path: Path) -> None:
    pre = _run(
        "--data-dir", str(tmp_path / "d"), "preprocess", "--json", "# Task\nWrite a Python CSV parser", cwd=tmp_path
    )
    a2 = subprocess.run(
        ["ragstream", "--data-dir", str(tmp_path / "d"), "a2", "--json"],
        input=pre.stdout,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert a2.returncode == 0, a2.stderr
    sp = json.loads(a2.stdout)
    assert sp["stage"] == "a2" and sp["history_of_stages"] == ["preprocessed", "a2"]
    assert sp["extras"]["a2"]["provider"] == "local"


def test_a2_on_a_raw_superprompt_is_a_stage_order_error(tmp_path: Path) -> None:
    a2 = subprocess.run(
        ["ragstream", "a2"], input='{"stage": "raw"}', capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert a2.returncode == 2
    assert "stage 'a2' cannot run now" in a2.stderr


def test_demo_is_the_main_job_offline(tmp_path: Path) -> None:
    env_dir = tmp_path / "data"
    out = subprocess.run(
        ["ragstream", "--data-dir", str(env_dir), "demo"], capture_output=True, text=True, cwd=tmp_path, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert "sample: 6 files seen, 6 added" in out.stderr
    assert "stage built" in out.stderr
    assert out.stdout.startswith("## System")
    assert '~~~~excerpt source="' in out.stdout and "## Condensed context" in out.stdout
    assert '~~~~excerpt source="architecture.md"' in out.stdout  # it names the stages and the human review


def test_demo_keeps_the_document_on_how_chunks_are_found(tmp_path: Path) -> None:
    out = subprocess.run(
        ["ragstream", "--data-dir", str(tmp_path / "data"), "demo"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert '~~~~excerpt source="retrieval.md"' in out.stdout


def test_run_review_step_resume_history(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    from tests.fixtures_docs import SAMPLE

    ingest = _run("--data-dir", data, "ingest", "demo", "--path", str(SAMPLE), "--quiet", cwd=tmp_path)
    assert ingest.returncode == 0, ingest.stderr
    assert "6 added" in ingest.stdout
    sctx = tmp_path / "sctx.md"
    sctx.write_text("### Facts\n- REVIEWED BY A PERSON\n", encoding="utf-8")
    run = _run(
        "--data-dir",
        data,
        "run",
        "# Task\nHow are chunks fenced?",
        "--project",
        "demo",
        "--thread",
        "t1",
        "--review",
        "--sctx-file",
        str(sctx),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert "paused after A4" in run.stderr and "REVIEWED BY A PERSON" in run.stdout
    as_json = _run(
        "--data-dir",
        data,
        "run",
        "# Task\nHow are chunks fenced?",
        "--project",
        "demo",
        "--thread",
        "j1",
        "--json",
        cwd=tmp_path,
    )
    assert as_json.returncode == 0, as_json.stderr
    printed = json.loads(as_json.stdout)
    meta = printed["run_metadata"]
    assert printed["thread_id"] == meta["trace_id"] == "j1" and meta["stage"] == "built"
    assert meta["retrieval"]["candidates"] > 0 and printed["prompt_ready"].startswith("## System")
    trace = _run("--data-dir", data, "trace", "--thread", "j1", cwd=tmp_path)
    assert trace.returncode == 0 and "run: trace j1, project demo, stage built" in trace.stdout
    assert json.loads(_run("--data-dir", data, "trace", "--thread", "j1", "--metadata", cwd=tmp_path).stdout) == meta
    history = _run("--data-dir", data, "history", "--thread", "t1", cwd=tmp_path)
    assert history.returncode == 0 and "stage built" in history.stdout and "stage a4" in history.stdout

    step = _run(
        "--data-dir",
        data,
        "step",
        "preprocess",
        "# Task\nWhat does ingestion skip?",
        "--thread",
        "t2",
        "--project",
        "demo",
        cwd=tmp_path,
    )
    assert step.returncode == 0, step.stderr
    bad = _run("--data-dir", data, "step", "a4", "--thread", "t2", cwd=tmp_path)
    assert bad.returncode == 2 and "stage 'a4' cannot run now" in bad.stderr
    retrieved = _run("--data-dir", data, "step", "retrieval", "--thread", "t2", cwd=tmp_path)
    assert retrieved.returncode == 0 and "## Retrieved context" in retrieved.stdout
    assert "ingestion.md@" in retrieved.stdout
    nothing = _run("--data-dir", data, "resume", "--thread", "t-none", cwd=tmp_path)
    assert nothing.returncode == 2 and "nothing to resume" in nothing.stderr

    strict = "# Task\nHow are chunks fenced?\n# Zorblat notes\nQUUXLINE fences use tildes.\n"
    waits = _run("--data-dir", data, "run", strict, "--project", "demo", "--thread", "s1", "--strict", cwd=tmp_path)
    assert waits.returncode == 2 and "'Zorblat notes' waits for a decision" in waits.stderr
    assert "ragstream resume --thread s1 --decide 'Zorblat notes=<" in waits.stderr
    decided = _run("--data-dir", data, "resume", "--thread", "s1", "--decide", "Zorblat notes=keep", cwd=tmp_path)
    assert decided.returncode == 0, decided.stderr
    assert "stage built" in decided.stderr  # the decision applied, the run went on to the final prompt, like `run`
    assert "### Zorblat notes\nQUUXLINE" in decided.stdout  # kept as an additional section
    again = _run("--data-dir", data, "run", strict, "--project", "demo", "--thread", "s2", "--strict", cwd=tmp_path)
    assert again.returncode == 0 and "stage built" in again.stderr  # not asked again
    inline = _run(
        "--data-dir",
        data,
        "run",
        strict.replace("Zorblat", "Blorp"),
        "--project",
        "demo",
        "--strict",
        "--decide",
        "Blorp notes=drop",
        cwd=tmp_path,
    )
    assert inline.returncode == 0 and "stage built" in inline.stderr and "QUUXLINE" not in inline.stdout


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`ragstream ... | head`: the reader leaves early; no traceback, just the end of the command."""
    proc = subprocess.Popen(
        ["ragstream", "agents", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_an_option_given_twice_is_refused(tmp_path: Path) -> None:
    out = _run("run", "# Task\nHi", "--project", "a", "--project", "b", cwd=tmp_path)
    assert out.returncode == 2 and "--project given twice" in out.stderr


def test_verbose_logs_what_ingestion_did_and_default_does_not(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\nChunks are cut at headings.\n")
    quiet = _run("ingest", "p", "--path", str(docs), "--quiet", cwd=tmp_path)
    loud = _run("-v", "ingest", "p", "--path", str(docs), "--quiet", cwd=tmp_path)
    assert quiet.returncode == loud.returncode == 0
    assert "INFO" not in quiet.stderr and "INFO ragstream.ingestion: ingest p:" in loud.stderr


def test_models_prepare_builds_the_configured_variant_without_torch(tmp_path: Path) -> None:
    """The default backend's graph is built from the packaged int8 weights; torch is never imported."""
    script = (
        "import sys; from ragstream.app.cli import main; code = main(['models', 'prepare']); "
        "print('torch loaded' if 'torch' in sys.modules else 'no torch'); sys.exit(code)"
    )
    env = {**os.environ, "RAGSTREAM_MODELS_DIR": str(tmp_path / "models")}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("w8-int8: ") and "-w8-int8-" in done.stdout and "no torch" in done.stdout
    assert len(list((tmp_path / "models").glob("*.onnx"))) == 1


def test_ingesting_a_folder_with_nothing_to_ingest_says_why_and_writes_no_project(tmp_path: Path) -> None:
    """`ragstream ingest NAME --path DIR` as a user types it, on an empty folder and on one whose files are all
    refused: exit 2, the reason on stderr, no traceback, and no project listed or folder left under the data root."""
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = tmp_path / "refused"
    refused.mkdir()
    (refused / "logo.bin").write_bytes(b"\x00\x01\x02")
    (refused / "notes.txt").write_text("")
    for name, folder, reason in (
        ("e1", empty, "it has no files"),
        ("e2", refused, "logo.bin: unsupported file type '.bin'; notes.txt: empty (no text)"),
    ):
        out = _run("ingest", name, "--path", str(folder), cwd=tmp_path)
        assert out.returncode == 2
        assert f"error: nothing to ingest in {folder}: " in out.stderr and reason in out.stderr
        assert "Traceback" not in out.stderr and "reshape" not in out.stderr
    listed = _run("projects", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.startswith("no projects under")
    assert not list((tmp_path / "data" / "chroma_db").glob("e*"))


def test_ingest_progress_writes_no_escape_codes_into_a_pipe_and_a_bar_on_a_terminal(tmp_path: Path) -> None:
    """`ragstream ingest ... 2>log | tee`: what a pipe or a log file gets is plain lines; on a terminal the
    progress bar is drawn as before."""
    import fcntl
    import pty
    import struct
    import termios

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\nChunks are cut at headings.\n")
    piped = _run("ingest", "p", "--path", str(docs), cwd=tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.startswith("p: 1 files seen, 1 added")
    for stream in (piped.stdout, piped.stderr):
        assert "\r" not in stream and "\x1b" not in stream
    assert "embed: 1 chunks" in piped.stderr.splitlines()  # a log still says which phase ran
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a new pty is 0 columns wide
    with os.fdopen(leader, "rb", buffering=0) as terminal:
        done = subprocess.run(
            ["ragstream", "ingest", "q", "--path", str(docs)],
            stdout=subprocess.PIPE,
            stderr=follower,
            cwd=tmp_path,
            timeout=120,
        )
        os.close(follower)
        drawn = b""
        while True:
            try:
                block = terminal.read(4096)
            except OSError:  # the terminal's other end is closed: everything written has been read
                break
            if not block:
                break
            drawn += block
    assert done.returncode == 0
    assert b"scan: 100%" in drawn and b"\r" in drawn
