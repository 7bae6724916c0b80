"""Which source language a file is in, and how to read its definitions (from config/code.json)."""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from ragstream.errors import ConfigError


@dataclass(frozen=True)
class DefinitionRule:
    kind: str
    name: tuple[str, ...] = ("field:name",)
    value_types: frozenset[str] = frozenset()
    qualifier: tuple[str, ...] = ()


@dataclass(frozen=True)
class Language:
    name: str
    parser: str | None  # "ast", "module:function" of a tree-sitter grammar, or None (lines only)
    definitions: dict[str, DefinitionRule] = field(default_factory=dict)
    containers: frozenset[str] = frozenset()
    wrappers: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset()
    blocks: frozenset[str] = frozenset()

    def grammar(self) -> Any | None:
        """The tree-sitter Language, or None when its package is not installed (lines only, then)."""
        if not self.parser or self.parser == "ast":
            return None
        return _grammar(self.parser)


@cache
def _grammar(spec: str) -> Any | None:
    module_name, function = spec.split(":")
    try:
        import tree_sitter

        return tree_sitter.Language(getattr(importlib.import_module(module_name), function)())
    except (ImportError, AttributeError):
        return None


class Languages:
    def __init__(self, languages: dict[str, Language], by_suffix: dict[str, Language]) -> None:
        self.languages = languages
        self.by_suffix = by_suffix

    def of(self, path: str) -> Language | None:
        """The file's source language, None for prose and data files."""
        return self.by_suffix.get(PurePosixPath(path).suffix.lower())


@lru_cache(maxsize=4)
def load_languages(config_dir: Path) -> Languages:
    path = config_dir / "code.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))["languages"]
        languages: dict[str, Language] = {}
        by_suffix: dict[str, Language] = {}
        for name, entry in raw.items():
            rules = raw[entry["same_as"]] if "same_as" in entry else entry
            language = Language(
                name=name,
                parser=entry.get("parser"),
                definitions={
                    node: DefinitionRule(
                        rule["kind"],
                        tuple(rule.get("name", ("field:name",))),
                        frozenset(rule.get("value_types", ())),
                        tuple(rule.get("qualifier", ())),
                    )
                    for node, rule in rules.get("definitions", {}).items()
                },
                containers=frozenset(rules.get("containers", ())),
                wrappers=frozenset(rules.get("wrappers", ())),
                prefixes=frozenset(rules.get("prefixes", ())),
                blocks=frozenset(rules.get("blocks", ())),
            )
            languages[name] = language
            for suffix in entry["suffixes"]:
                by_suffix[suffix] = language
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: cannot read the code languages: {exc}") from exc
    return Languages(languages, by_suffix)
