"""Ignore files (`.gitignore`, `.ignore`, `.ragstreamignore`) at any depth, with git's semantics.

People keep build outputs, caches and local secrets out of their repositories with these files, so
ingestion honours them the way `git ls-files --others --exclude-standard` does: a file's patterns apply
below the folder holding it, a deeper folder's file overrides a shallower one's, within one folder the
last matching pattern wins (so `!negation` re-includes), and a folder once excluded is not entered
(git cannot re-include what is below it either). In one folder `.ignore` overrides `.gitignore` and
`.ragstreamignore` overrides both, as ripgrep does with `.ignore`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pathspec

IGNORE_FILES = (".gitignore", ".ignore", ".ragstreamignore")


@dataclass(frozen=True)
class _Rules:
    """One ignore file: its spec, and the file and line each pattern came from (for the skip reason)."""

    spec: pathspec.GitIgnoreSpec
    origins: list[str]


def _read_rules(folder: Path, folder_rel: str) -> list[_Rules]:
    rules = []
    for name in IGNORE_FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
        spec = pathspec.GitIgnoreSpec.from_lines([line for _, line in numbered])
        where = f"{folder_rel}/{name}" if folder_rel else name
        origins = [f"{where}:{n} ({line.strip()})" for n, line in numbered]
        if len(origins) != len(spec.patterns):  # pathspec dropped a line: still honour it, name only the file
            origins = [where] * len(spec.patterns)
        rules.append(_Rules(spec, origins))
    return rules


class IgnoreRules:
    """The ignore files met so far on a top-down walk; `rule_for` says which rule (if any) excludes a path."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._by_folder: dict[str, list[_Rules]] = {}

    def enter(self, folder_rel: str) -> None:
        """Read the ignore files of a folder the walk is about to list ('' is the root)."""
        self._by_folder[folder_rel] = _read_rules(self._root / folder_rel if folder_rel else self._root, folder_rel)

    def rule_for(self, rel: str, is_dir: bool) -> str | None:
        """The rule excluding `rel` (a posix path from the root), or None when it is included."""
        parts = rel.split("/")
        for depth in range(len(parts) - 1, -1, -1):  # the deepest folder with a matching pattern decides
            folder = "/".join(parts[:depth])
            local = "/".join(parts[depth:]) + ("/" if is_dir else "")
            for rules in reversed(self._by_folder.get(folder, [])):
                result = rules.spec.check_file(local)
                if result.include is not None and result.index is not None:  # a pattern matched: its index
                    return rules.origins[result.index] if result.include else None
        return None
