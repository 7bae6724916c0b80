"""The whole pipeline and a send on a REAL model server (bench/real_llm.py's run, asserted).

Needs `RAGSTREAM_REAL_LLM_URL` pointing at an OpenAI-compatible server with a small instruct model
(`../shared/tools/real_llm_server.sh` starts llama.cpp's `llama-server` with Qwen2.5-Coder-0.5B); CI
has none, so without it the test is skipped and says why.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.real_llm import ingest, one_run, reachable, settings_for

URL = os.environ.get("RAGSTREAM_REAL_LLM_URL", "")
ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not URL, reason="no model server configured: set RAGSTREAM_REAL_LLM_URL (e.g. http://127.0.0.1:8089/v1)"
    ),
]


@pytest.mark.parametrize("mode", ["json_schema", "prompt"])
def test_a_real_small_model_runs_every_stage_and_a_send(tmp_path: Path, mode: str) -> None:
    why = reachable(URL)
    if why:
        pytest.skip(why)
    settings = settings_for(tmp_path, URL, mode)
    ingest(settings, "sample")
    result = one_run(settings, "sample", (ROOT / "examples" / "prompt.md").read_text(), "architecture.md", send=True)
    assert result["stage"] == "built"
    assert result["condensed_lines"] >= 1 and result["every_line_cites_a_given_chunk"]
    assert result["architecture.md_kept_and_fenced"]
    assert result["answer_streamed_tokens"] > 0
    for stage in ("a2", "a3", "a4", "a5"):
        row = result["stages"][stage]
        assert row["calls"] == row["valid"] + row["repaired"] + row["fell_back"] > 0
