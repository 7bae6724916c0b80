"""The README's commands are the ones that run: CI's script runs the README's install and test lines."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def blocks(language: str) -> list[str]:
    """The README's fenced code blocks of one language, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", README.read_text(encoding="utf-8"), flags=re.M | re.S)


def section_block(title: str) -> str:
    """The first bash block under a `## title` heading."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```bash\n(.*?)^```$", section, flags=re.M | re.S)[0].strip()


def test_ci_runs_the_readme_install_and_test_commands() -> None:
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines() if line.strip()]
    install, test = section_block("Install"), section_block("Test")
    assert ci[-2:] == [install, test]
    assert "pytest" in test and "mypy" in test and "ruff check" in test
