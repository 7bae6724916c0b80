"""A source file's definitions (classes, functions, methods, ...) with their line ranges.

Python is read with its own `ast`; other languages with a tree-sitter grammar when its package is
installed. A file that does not parse has no outline (it is then cut by lines): a definition is
only claimed where the parser saw one.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from ragstream.code.languages import Language

DOC_CHARS = 160
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z`'\"]|\s*$)")
_COMMENT_MARKERS = re.compile(r"^\s*(?:/\*\*?|\*/|\*|///?|//!|#!?|--)\s?")


@dataclass(frozen=True)
class Definition:
    """Lines are 1-based and inclusive. `start` includes decorators and the doc comment above;
    `body` is the first line of the body (the signature, start..body, is never cut); `cuts` are
    lines where a statement of the body starts: where a long definition may be cut."""

    kind: str
    name: str  # qualified: Outer.inner
    start: int
    body: int
    end: int
    doc: str
    cuts: tuple[int, ...]
    children: tuple[Definition, ...]

    def descendants(self) -> list[Definition]:
        return [d for child in self.children for d in (child, *child.descendants())]


def outline(text: str, language: Language) -> list[Definition] | None:
    """Top-level definitions, or None when the language has no parser here or the file does not parse."""
    if language.parser == "ast":
        return _python(text)
    grammar = language.grammar()
    if grammar is None:
        return None
    return _tree_sitter(text, language, grammar)


def doc_summary(doc: str) -> str:
    """The doc comment's first sentence (its first paragraph when it has no sentence end), without
    comment markers; a summary longer than DOC_CHARS is cut at a word and ends with an ellipsis."""
    words: list[str] = []
    for line in doc.splitlines():
        line = _COMMENT_MARKERS.sub("", line).strip().rstrip("*/").strip()
        if not line and words:
            break
        words += line.split()
    paragraph = " ".join(words)
    end = _SENTENCE_END.search(paragraph)
    summary = paragraph[: end.start() + 1] if end else paragraph
    if len(summary) <= DOC_CHARS:
        return summary
    return summary[:DOC_CHARS].rsplit(" ", 1)[0] + " …"


# -- Python ----------------------------------------------------------------------------------


def _python(text: str) -> list[Definition] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.splitlines()
    return _python_defs(tree.body, "", in_class=False, lines=lines)


def _comments_above(lines: list[str], line: int) -> int:
    """The first line of a run of `#` comments directly above `line` (or `line` itself)."""
    while line > 1 and lines[line - 2].lstrip().startswith("#"):
        line -= 1
    return line


def _python_defs(nodes: list[ast.stmt], prefix: str, in_class: bool, lines: list[str]) -> list[Definition]:
    found = []
    for node in nodes:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        is_class = isinstance(node, ast.ClassDef)
        name = prefix + node.name
        start = _comments_above(lines, min([node.lineno, *(d.lineno for d in node.decorator_list)]))
        cuts = sorted(
            {
                min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))])
                for s in ast.walk(node)
                if isinstance(s, ast.stmt) and s is not node and s.lineno > node.lineno
            }
        )
        found.append(
            Definition(
                kind="class" if is_class else "method" if in_class else "function",
                name=name,
                start=start,
                body=node.body[0].lineno,
                end=node.end_lineno or node.lineno,
                doc=doc_summary(ast.get_docstring(node) or ""),
                cuts=tuple(cuts),
                children=tuple(_python_defs(node.body, name + ".", True, lines)) if is_class else (),
            )
        )
    return found


# -- tree-sitter -----------------------------------------------------------------------------


def _last_line(node: Any) -> int:
    """1-based last line; a node ending at column 0 ends on the line before (its newline)."""
    row, column = node.end_point
    return row if column == 0 and row > node.start_point.row else row + 1


def _tree_sitter(text: str, language: Language, grammar: Any) -> list[Definition] | None:
    import tree_sitter

    source = text.encode("utf-8")
    tree = tree_sitter.Parser(grammar).parse(source)
    if tree.root_node.has_error:
        return None
    return _ts_defs(tree.root_node, "", language, source)


def _node_text(node: Any, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def _ts_name(node: Any, steps: tuple[str, ...], source: bytes) -> str | None:
    current = node
    for step in steps:
        how, what = step.split(":", 1)
        if how == "field":
            current = current.child_by_field_name(what)
        else:
            current = next((c for c in current.named_children if c.type == what), None)
        if current is None:
            return None
    return _node_text(current, source)


def _ts_defs(parent: Any, prefix: str, language: Language, source: bytes) -> list[Definition]:
    found: list[Definition] = []
    for node in parent.named_children:
        rule = language.definitions.get(node.type)
        if rule is not None and rule.value_types:
            declarator = next((c for c in node.named_children if c.type == "variable_declarator"), None)
            value = declarator.child_by_field_name("value") if declarator is not None else None
            if value is None or value.type not in rule.value_types:
                rule = None
        if rule is None:
            if node.type not in language.prefixes:
                found += _ts_defs(node, prefix, language, source)  # export statements, namespaces' blocks
            continue
        name = _ts_name(node, rule.name, source)
        if not name:
            continue
        owner = _ts_name(node, rule.qualifier, source) if rule.qualifier else None
        if owner:
            name = f"{owner.lstrip('*&').strip()}.{name}"
        outer = node
        while (
            outer.parent is not None and outer.parent.type in language.wrappers and outer.parent.named_child_count <= 2
        ):
            outer = outer.parent
        start, doc = _ts_prefix(outer, language, source)
        body = node.child_by_field_name("body") or next(  # grammars without a body field (Kotlin): its *_body child
            (c for c in node.named_children if c.type.endswith("_body")), None
        )
        first_statement = body.named_children[0] if body is not None and body.named_children else body
        qualified = prefix + name
        found.append(
            Definition(
                kind=rule.kind,
                name=qualified,
                start=start,
                body=(first_statement or node).start_point.row + 1,
                end=_last_line(outer),
                doc=doc,
                cuts=tuple(sorted(_ts_cuts(body, language))) if body is not None else (),
                children=tuple(_ts_defs(body, qualified + ".", language, source))
                if body is not None and rule.kind in language.containers
                else (),
            )
        )
    return found


def _ts_prefix(node: Any, language: Language, source: bytes) -> tuple[int, str]:
    """The first line of the comments and attributes directly above `node`, and its doc summary."""
    start = node.start_point.row + 1
    comments: list[str] = []
    sibling = node.prev_named_sibling
    while sibling is not None and sibling.type in language.prefixes and _last_line(sibling) >= start - 1:
        start = sibling.start_point.row + 1
        if "comment" in sibling.type:
            comments.insert(0, _node_text(sibling, source))
        sibling = sibling.prev_named_sibling
    return start, doc_summary("\n".join(comments))


def _ts_cuts(body: Any, language: Language) -> set[int]:
    """Lines where a statement (a child of a block) starts, anywhere in the body."""
    cuts: set[int] = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if node.type in language.blocks:
            cuts.update(child.start_point.row + 1 for child in node.named_children)
        stack.extend(node.named_children)
    cuts.discard(body.start_point.row + 1)
    return cuts
