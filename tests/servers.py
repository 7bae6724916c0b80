"""Helpers for tests that start real servers on loopback ports."""

from __future__ import annotations

import socket
import subprocess
import time
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
