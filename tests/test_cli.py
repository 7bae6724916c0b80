"""The `ragstream` console script as a user runs it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ragstream", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_preprocess_prints_segment_table_and_prompt(tmp_path: Path) -> None:
    out = _run("preprocess", "# Task\nExplain RRF\n# System\nbe terse\n# Notes\nn", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "text1  TASK" in out.stdout
    assert "DROPPED_META" in out.stdout and "UNDECIDED" in out.stdout
    assert "=== prompt_ready ===" in out.stdout
    assert "## Task\nExplain RRF" in out.stdout


def test_preprocess_json_from_file(tmp_path: Path) -> None:
    prompt = tmp_path / "p.md"
    prompt.write_text("# Goal\nship it\n# Notes\nextra", encoding="utf-8")
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
