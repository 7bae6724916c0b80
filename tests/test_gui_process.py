"""`ragstream gui` as a service manager or a script runs it: a signal to it stops the server it started."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import free_port, wait_for_http

pytestmark = pytest.mark.slow  # starts a server

RAGSTREAM = shutil.which("ragstream", path=str(Path(sys.executable).parent)) or "ragstream"


def _serving(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_ragstream_gui_leaves_nothing_serving_the_port(sig: signal.Signals, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "gui.log"
    env = {**os.environ, "RAGSTREAM_DATA_DIR": str(tmp_path / "data"), "RAGSTREAM_LLM_PROVIDER": "local"}
    with log.open("w") as out:
        proc = subprocess.Popen(
            [RAGSTREAM, "gui", "--headless", "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/_stcore/health", proc, 180, log)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        assert not _serving(port), log.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
