"""`ragstream users`: the token is printed once (the last line) and kept only as a digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstream.app.cli import main
from ragstream.errors import ProjectError
from ragstream.settings import load_settings
from ragstream.tenancy.users import UserRegistry


def test_users_add_list_remove_and_tokens_kept_hashed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "users", "add", "alice", "--project", "demo", "--project", "notes"]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    assert token.startswith("rs_") and len(token) > 40
    stored = (data / "users.json").read_text()
    assert token not in stored and "token_sha256" in stored
    registry = UserRegistry.of(load_settings(overrides={"data_dir": str(data)}))
    alice = registry.authenticate(token)
    assert alice is not None and alice.projects == ("demo", "notes")
    assert registry.authenticate(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    alice.require_project("notes")
    with pytest.raises(ProjectError, match="not allowed on project 'other'"):
        alice.require_project("other")
    assert main(["--data-dir", str(data), "users", "add", "alice"]) == 2  # exists: remove it first
    assert main(["--data-dir", str(data), "users", "list"]) == 0
    assert "alice\tdemo, notes" in capsys.readouterr().out
    assert main(["--data-dir", str(data), "users", "remove", "alice"]) == 0
    assert registry.authenticate(token) is None and registry.list() == []
