"""Helpers for tests that start real servers on loopback ports."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from ragstream.settings import Settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, proc: subprocess.Popen, timeout_s: float, log: Path | None = None) -> None:
    """Poll `url` until it answers 200; fail with the server's log if it dies or never answers."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server exited early:\n{log.read_text()[-3000:] if log else ''}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.kill()
    pytest.fail(f"server at {url} did not answer within {timeout_s:.0f} s")


def link_indexed_project(settings: Settings, indexed: Settings, project: str = "demo") -> None:
    """Make the session's ingested sample project visible under another data root."""
    (settings.data_dir / "chroma_db").mkdir(parents=True, exist_ok=True)
    (settings.data_dir / "chroma_db" / project).symlink_to(indexed.data_dir / "chroma_db" / project)


@contextmanager
def langgraph_dev(workdir: Path, env: dict[str, str], *extra_args: str) -> Iterator[tuple[str, Path]]:
    """`langgraph dev` on this repo's langgraph.json (custom auth included), on a free loopback port."""
    root = Path(__file__).resolve().parents[1]
    for name in ("langgraph.json", "graphs"):
        (workdir / name).symlink_to(root / name)
    port = free_port()
    env = {
        **os.environ,
        "RAGSTREAM_CONFIG_DIR": str(root / "config"),
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_STRICT_MSGPACK": "true",
        **env,
    }
    log_path = workdir / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "langgraph"),
                "dev",
                "--no-browser",
                "--no-reload",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                *extra_args,
            ],
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_for_http(f"{url}/ok", proc, 180, log_path)
            yield url, log_path
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
