"""Suites in their three formats, read and checked whole before anything is ingested or run.

A case folder (`corpus/` + `cases/NAME.md` + `NAME.json`, the format of ../shared/eval), a BEIR folder
(`corpus.jsonl[.gz]`, `queries.jsonl`, `qrels/*.tsv`) and a JSONL file of questions (its corpus is the
folder beside it named like it, `NAME/` for `NAME.jsonl`, else `corpus/` beside it, or `--corpus`) all
become one `Suite`: the corpus and the cases with what each case's final prompt must hold. Any problem is a
`SuiteError` naming the file and what is wrong, raised before a project is created, so a bad suite changes
nothing.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragstream.errors import InputError

# The README's fields (../shared/eval/README.md) and the type each must have.
LIST_FIELDS = (
    "expected_files",
    "key_facts",
    "condensed_must_contain",
    "system_must_contain",
    "must_contain",
    "must_not_contain",
    "not_covered_terms",
)
BOOL_FIELDS = ("require_all_expected", "no_documents")
CASE_FIELDS = frozenset(("kind", *LIST_FIELDS, *BOOL_FIELDS))
# A JSONL line: the question and its relevant passages, plus any of the case fields.
JSONL_FIELDS = frozenset(("id", "question", "relevant", *CASE_FIELDS)) - {"expected_files"}


class SuiteError(InputError):
    """The suite cannot be run as given: a missing file, a case without a prompt, an unknown field, a relevant
    path not in the corpus. Raised before anything is ingested."""


@dataclass(frozen=True)
class Relevant:
    """A passage that answers a case: a corpus path, optionally its lines (first, last), with a graded gain."""

    path: str
    lines: tuple[int, int] | None = None
    grade: int = 1


@dataclass(frozen=True)
class Case:
    name: str
    prompt: str
    fields: dict[str, Any]  # the README's fields, validated
    relevant: tuple[Relevant, ...] = ()

    def strings(self, name: str) -> list[str]:
        return list(self.fields.get(name, []))


@dataclass(frozen=True)
class Suite:
    """A corpus and its cases. `documents` holds a BEIR corpus's texts (id -> text) to be written as files."""

    name: str
    kind: str  # "folder", "beir" or "jsonl"
    corpus: Path
    cases: tuple[Case, ...]
    documents: dict[str, str] = field(default_factory=dict, repr=False)

    def paths(self) -> set[str]:
        """The corpus's paths, as chunks name their source."""
        if self.documents:
            return {beir_path(doc_id) for doc_id in self.documents}
        return {p.relative_to(self.corpus).as_posix() for p in self.corpus.rglob("*") if p.is_file()}


def beir_path(doc_id: str) -> str:
    """The file a BEIR document is written to (and the path its chunks cite)."""
    return f"{doc_id}.txt"


def load_suite(path: Path, corpus: Path | None = None) -> Suite:
    """The suite at `path`, in whichever format it is; `corpus` overrides a JSONL or case folder's `corpus/`
    (a suite written over documents kept elsewhere, such as an installed package's source)."""
    if not path.exists():
        raise SuiteError(f"suite {path}: no such file or folder")
    if path.is_file():
        beside = path.parent / path.stem
        return _jsonl_suite(path, corpus or (beside if beside.is_dir() else path.parent / "corpus"))
    if (path / "cases").is_dir() or (path / "corpus").is_dir():
        return _folder_suite(path, corpus or path / "corpus")
    if corpus is not None:
        raise SuiteError(f"suite {path}: --corpus is for a JSONL suite or a folder of cases; a BEIR suite has its own")
    if any((path / name).exists() for name in ("corpus.jsonl", "corpus.jsonl.gz", "queries.jsonl")):
        return _beir_suite(path)
    raise SuiteError(
        f"suite {path}: not a suite (a folder with corpus/ and cases/, a BEIR folder with corpus.jsonl, "
        "queries.jsonl and qrels/, or a .jsonl file)"
    )


def _folder_suite(root: Path, corpus: Path) -> Suite:
    cases_dir = root / "cases"
    for needed in (corpus, cases_dir):
        if not needed.is_dir():
            raise SuiteError(f"suite {root}: missing folder {needed if needed.parent != root else needed.name + '/'}")
    prompts = {p.stem: p for p in cases_dir.glob("*.md")}
    specs = {p.stem: p for p in cases_dir.glob("*.json")}
    for name in sorted(set(specs) - set(prompts)):
        raise SuiteError(f"case {specs[name]}: no prompt (missing {name}.md beside it)")
    for name in sorted(set(prompts) - set(specs)):
        raise SuiteError(f"case {prompts[name]}: missing file {name}.json (what its final prompt must hold)")
    if not prompts:
        raise SuiteError(f"suite {root}: cases/ holds no case (NAME.md + NAME.json)")
    cases = []
    for name in sorted(prompts):
        prompt = _read_text(prompts[name])
        if not prompt.strip():
            raise SuiteError(f"case {prompts[name]}: the prompt is empty")
        fields = _fields(_read_json(specs[name]), specs[name], CASE_FIELDS)
        relevant = tuple(Relevant(p) for p in fields.get("expected_files", []))
        cases.append(Case(name, prompt, fields, relevant))
    suite = Suite(root.name, "folder", corpus, tuple(cases))
    _check_paths(suite, root)
    return suite


def _jsonl_suite(path: Path, corpus: Path) -> Suite:
    if not corpus.is_dir():
        raise SuiteError(
            f"suite {path}: missing corpus folder {corpus} "
            f"(put {path.stem}/ or corpus/ beside the file, or give --corpus)"
        )
    cases = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"case {where}: not JSON ({exc.msg})") from exc
        if not isinstance(raw, dict):
            raise SuiteError(f"case {where}: a line must be a JSON object")
        question = raw.get("question")
        if not isinstance(question, str) or not question.strip():
            raise SuiteError(f"case {where}: no prompt (a non-empty 'question' is required)")
        unknown = sorted(set(raw) - JSONL_FIELDS)
        if unknown:
            raise SuiteError(f"case {where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(JSONL_FIELDS))})")
        fields = _fields({k: v for k, v in raw.items() if k not in ("id", "question", "relevant")}, where, CASE_FIELDS)
        relevant = tuple(_relevant(item, where) for item in _list(raw.get("relevant", []), "relevant", where))
        if "relevant" in raw:  # `[]`: no document answers it; absent: the case says nothing about files
            fields["expected_files"] = list(dict.fromkeys(r.path for r in relevant))
        name = str(raw.get("id", f"q{number:03d}"))
        cases.append(Case(name, question, fields, relevant))
    if not cases:
        raise SuiteError(f"suite {path}: no case (one JSON object a line)")
    suite = Suite(path.stem, "jsonl", corpus, tuple(cases))
    _check_paths(suite, path)
    return suite


def _beir_suite(root: Path) -> Suite:
    corpus_file = next((root / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (root / n).is_file()), None)
    if corpus_file is None:
        raise SuiteError(f"suite {root}: missing file corpus.jsonl (or corpus.jsonl.gz)")
    queries_file = root / "queries.jsonl"
    if not queries_file.is_file():
        raise SuiteError(f"suite {root}: missing file queries.jsonl")
    qrels_files = sorted((root / "qrels").glob("*.tsv"))
    if not qrels_files:
        raise SuiteError(f"suite {root}: missing file qrels/*.tsv (query-id, corpus-id, score)")
    documents = {}
    for where, doc in _jsonl_objects(corpus_file):
        if "_id" not in doc:
            raise SuiteError(f"document {where}: no '_id'")
        documents[str(doc["_id"])] = f"{doc.get('title', '')}\n\n{doc.get('text', '')}".strip() + "\n"
    queries = {}
    for where, query in _jsonl_objects(queries_file):
        text = query.get("text")
        if "_id" not in query or not isinstance(text, str) or not text.strip():
            raise SuiteError(f"case {where}: no prompt (a query needs '_id' and a non-empty 'text')")
        queries[str(query["_id"])] = text
    qrels: dict[str, list[Relevant]] = {}
    for qrels_file in qrels_files:
        for number, line in enumerate(_read_text(qrels_file).splitlines(), start=1):
            parts = line.split("\t")
            if number == 1 and parts[0] == "query-id" or not line.strip():
                continue
            if len(parts) != 3 or not parts[2].strip().lstrip("-").isdigit():
                raise SuiteError(f"qrels {qrels_file}:{number}: want 'query-id<TAB>corpus-id<TAB>score'")
            qid, did, score = parts[0], parts[1], int(parts[2])
            if qid not in queries:
                raise SuiteError(f"qrels {qrels_file}:{number}: query {qid!r} is not in queries.jsonl")
            if did not in documents:
                raise SuiteError(f"qrels {qrels_file}:{number}: relevant document {did!r} is not in the corpus")
            if score > 0:
                qrels.setdefault(qid, []).append(Relevant(beir_path(did), grade=score))
    cases = tuple(
        Case(qid, queries[qid], {"expected_files": [r.path for r in rel]}, tuple(rel)) for qid, rel in qrels.items()
    )
    return Suite(root.name, "beir", root, cases, documents)


def _fields(raw: Any, where: object, known: frozenset[str]) -> dict[str, Any]:
    """The case's fields, each of its type; an unknown one is named with the known ones."""
    if not isinstance(raw, dict):
        raise SuiteError(f"case {where}: want a JSON object of fields")
    unknown = sorted(set(raw) - known)
    if unknown:
        raise SuiteError(f"case {where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
    fields = dict(raw)
    for name in LIST_FIELDS:
        if name in fields:
            fields[name] = _list(fields[name], name, where)
            if not all(isinstance(v, str) and v.strip() for v in fields[name]):
                raise SuiteError(f"case {where}: '{name}' must be a list of non-empty strings")
    for name in BOOL_FIELDS:
        if name in fields and not isinstance(fields[name], bool):
            raise SuiteError(f"case {where}: '{name}' must be true or false")
    if "kind" in fields and not isinstance(fields["kind"], str):
        raise SuiteError(f"case {where}: 'kind' must be a string")
    return fields


def _list(value: Any, name: str, where: object) -> list[Any]:
    if not isinstance(value, list):
        raise SuiteError(f"case {where}: '{name}' must be a list")
    return value


def _relevant(item: Any, where: str) -> Relevant:
    if isinstance(item, str):
        return Relevant(item)
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or set(item) - {"path", "lines"}:
        raise SuiteError(f"case {where}: a relevant entry is {{'path': ..., 'lines': [first, last]}} (lines optional)")
    lines = item.get("lines")
    if lines is None:
        return Relevant(item["path"])
    if (
        not isinstance(lines, list)
        or len(lines) != 2
        or not all(isinstance(n, int) and n >= 1 for n in lines)
        or lines[0] > lines[1]
    ):
        raise SuiteError(f"case {where}: 'lines' of {item['path']!r} must be [first, last], 1-based, first <= last")
    return Relevant(item["path"], (lines[0], lines[1]))


def _check_paths(suite: Suite, where: Path) -> None:
    """Every relevant path is a corpus file (a typo would make the case unanswerable and its scores lie)."""
    paths = suite.paths()
    for case in suite.cases:
        for rel in case.relevant:
            if rel.path not in paths:
                raise SuiteError(f"case {case.name} ({where}): relevant path {rel.path!r} is not in the corpus")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path} is not UTF-8 text (byte {exc.start})") from exc


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise SuiteError(f"case {path}: not JSON ({exc.msg}, line {exc.lineno})") from exc


def _jsonl_objects(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(file:line, object) for every non-blank line of a (possibly gzipped) JSONL file."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                text = handle.read()
        else:
            text = _read_text(path)
    except (OSError, EOFError) as exc:
        raise SuiteError(f"cannot read {path}: {exc}") from exc
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise SuiteError(f"{path}:{number}: a line must be a JSON object")
        rows.append((f"{path}:{number}", obj))
    return rows
