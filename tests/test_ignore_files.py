"""Ignore files at any depth: ingestion takes exactly what git itself lists for a real repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ragstream.app.cli import main
from ragstream.index.manifest import Manifest
from ragstream.ingestion.manager import IngestionManager
from ragstream.settings import Settings
from ragstream.tenancy.projects import project_paths

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git to say what it lists")

FILES = {
    ".gitignore": "*.log\nbuild/\n/top-only.md\n!keep.log\ncache*\n",
    "README.md": "# Project\nThe readme.\n",
    "top-only.md": "ignored at the top only\n",
    "run.log": "a log line\n",
    "keep.log": "kept by a negation\n",
    "build/out.md": "a build output\n",
    "docs/guide.md": "# Guide\nHow to use it.\n",
    "docs/top-only.md": "the anchored rule does not reach here\n",
    "docs/.gitignore": "draft-*.md\n!draft-final.md\n/local/\n",
    "docs/draft-1.md": "a draft\n",
    "docs/draft-final.md": "the final draft\n",
    "docs/local/private.md": "only under docs/local\n",
    "docs/sub/local/public.md": "anchored rule is for docs/local only\n",
    "docs/sub/.ignore": "*.txt\n",
    "docs/sub/notes.txt": "ignored by .ignore\n",
    "docs/sub/a.md": "kept\n",
    "src/.gitignore": "!debug.log\ngenerated/\n",
    "src/debug.log": "re-included deeper\n",
    "src/generated/x.py": "x = 1\n",
    "src/app.py": "def main():\n    return 1\n",
    "src/cache_dir/data.json": '{"a": 1}\n',
    "notes/.ragstreamignore": "secret-plans.md\n",
    "notes/secret-plans.md": "not for prompts\n",
    "notes/todo.md": "things to do\n",
}


def _repo(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _git_lists(root: Path) -> set[str]:
    """What git lists; `.ignore` and `.ragstreamignore` are read as git reads a `.gitignore` (git itself knows
    only one per-folder file name), so a twin repository has them renamed (no folder here holds two)."""
    twin = root.with_name(root.name + "-as-git-sees-it")
    shutil.copytree(root, twin)
    for name in (".ignore", ".ragstreamignore"):
        for extra in twin.rglob(name):
            assert not extra.with_name(".gitignore").exists()
            extra.rename(extra.with_name(".gitignore"))
    command = ["git", "-C", str(twin), "ls-files", "--cached", "--others", "--exclude-standard"]
    listed = set(subprocess.run(command, check=True, capture_output=True, text=True).stdout.split())
    return {rel for rel in listed if not rel.rsplit("/", 1)[-1].startswith(".")}  # ignore files are not documents


def test_nested_ignore_files_ingest_exactly_what_git_lists(settings: Settings, tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    stats = IngestionManager(settings).ingest("repo", root)
    indexed = set(Manifest.load(project_paths(settings, "repo").manifest_path).files)
    not_documents = {rel: why for rel, why in stats.skipped.items() if not why.startswith("ignored by")}
    assert not_documents == {
        "keep.log": "unsupported file type '.log'",
        "src/debug.log": "unsupported file type '.log'",
    }
    assert indexed | set(not_documents) == _git_lists(root)
    assert {"docs/draft-final.md", "docs/top-only.md", "docs/sub/local/public.md", "src/app.py"} <= indexed
    assert stats.skipped["run.log"] == "ignored by .gitignore:1 (*.log)"
    assert stats.skipped["build/"] == "ignored by .gitignore:2 (build/)"
    assert stats.skipped["docs/draft-1.md"] == "ignored by docs/.gitignore:1 (draft-*.md)"
    assert stats.skipped["docs/local/"] == "ignored by docs/.gitignore:3 (/local/)"
    assert stats.skipped["docs/sub/notes.txt"] == "ignored by docs/sub/.ignore:1 (*.txt)"
    assert stats.skipped["notes/secret-plans.md"] == "ignored by notes/.ragstreamignore:1 (secret-plans.md)"


def test_no_ignore_ingests_the_ignored_files(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _repo(tmp_path / "repo")
    assert main(["--data-dir", str(settings.data_dir), "ingest", "repo", "--path", str(root), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "skipped run.log: ignored by .gitignore:1 (*.log)" in out
    assert main(["--data-dir", str(settings.data_dir), "ingest", "repo", "--quiet", "--no-ignore"]) == 0
    indexed = set(Manifest.load(project_paths(settings, "repo").manifest_path).files)
    assert {
        "build/out.md",
        "top-only.md",
        "docs/local/private.md",
        "notes/secret-plans.md",
        "src/generated/x.py",
    } <= indexed
