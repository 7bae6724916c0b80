"""`ragstream mcp` driven by the MCP SDK's own client over stdio: tools listed, excerpts and a final prompt back."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from ragstream.ingestion.manager import IngestionManager
from ragstream.settings import Settings

pytestmark = pytest.mark.slow  # a subprocess server

REPO = Path(__file__).resolve().parents[1]
AWS_KEY = "AKIA" + "Q7RZ2M5XK3PLD9WB"


def _structured(result) -> object:
    assert not result.is_error, result.content
    data = result.structured_content
    return data["result"] if isinstance(data, dict) and set(data) == {"result"} else data


async def _session(settings: Settings) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragstream.app.cli", "--data-dir", str(settings.data_dir), "mcp"],
        env=env,
        cwd=str(REPO),
    )
    async with Client(params, read_timeout_seconds=300) as client:
        tools = await client.list_tools()
        projects = await client.call_tool("list_projects", {})
        search = await client.call_tool(
            "search_project", {"project": "ops", "query": "restart the queue worker", "top_k": 3}
        )
        built = await client.call_tool(
            "build_superprompt",
            {
                "prompt": f"# Task\nHow do I restart the queue worker?\n# Context\nmy key is {AWS_KEY}\n",
                "project": "ops",
                "style": "xml",
            },
        )
        missing = await client.call_tool("search_project", {"project": "nope", "query": "x"})
        info = client.server_info
    return {"tools": tools, "projects": projects, "search": search, "built": built, "missing": missing, "info": info}


def test_mcp_client_lists_tools_and_gets_excerpts_and_a_final_prompt(settings: Settings, tmp_path: Path) -> None:
    root = tmp_path / "ops"
    root.mkdir()
    (root / "runbook.md").write_text(
        "# Runbook\n\nRestart the queue worker with `systemctl restart queue`.\n"
        "The backlog alarm fires at 10,000 messages.\n",
        encoding="utf-8",
    )
    (root / "worker.py").write_text(
        'def restart_worker(name):\n    """Restart the queue worker."""\n    return name\n', encoding="utf-8"
    )
    IngestionManager(settings).ingest("ops", root)

    got = asyncio.run(_session(settings))
    assert {t.name for t in got["tools"].tools} == {"list_projects", "search_project", "build_superprompt"}
    assert got["info"].name == "ragstream" and got["info"].version == version("ragstream") != ""
    for tool in got["tools"].tools:  # what a host shows: no indentation left over from the source
        assert tool.description and not any(line != line.lstrip() for line in tool.description.splitlines())
    assert _structured(got["projects"]) == [
        {"project": "ops", "ingested": True, "files": 2, "chunks": 2, "secrets_redacted": 0}
    ]

    excerpts = _structured(got["search"])
    assert excerpts and {e["source"] for e in excerpts} <= {"runbook.md", "worker.py"}
    runbook = next(e for e in excerpts if e["source"] == "runbook.md")
    assert (
        runbook["chunk"].startswith("runbook.md@")
        and runbook["lines"] == [1, 4]
        and "systemctl restart queue" in runbook["text"]
    )

    built = _structured(got["built"])
    assert built["style"] == "xml" and built["prompt"].startswith("<?xml")
    assert "How do I restart the queue worker?" in built["prompt"]
    assert AWS_KEY not in json.dumps(built) and "[REDACTED: AWS Access Key]" in built["prompt"]
    assert built["secrets_redacted"] == [{"type": "AWS Access Key", "line": 4}]
    assert {e["chunk"] for e in built["excerpts"]} and all(e["chunk"] in built["prompt"] for e in built["excerpts"])

    assert got["missing"].is_error and "no project 'nope'" in got["missing"].content[0].text
