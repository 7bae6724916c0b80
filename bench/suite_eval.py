"""Labelled suites (../shared/eval/README.md's format) judged case by case, offline, with the shipped defaults.

A suite is a folder with `cases/` (NAME.md, the prompt as a user wrote it; NAME.json, what a good final prompt
holds) and `corpus/` (or `--corpus`, a folder of documents elsewhere, such as an installed package's source).
The corpus is ingested once as one project (under --work, reused while its folder exists); each case runs the
whole pipeline with the `local` provider in a data root of its own (memory stays apart) and is judged by the
README's fields and the invariants every final prompt owes its user. Printed per case: the failed checks;
per suite: cases passing, answering file first (and among the first five excerpts), key facts in the prompt
and in the condensed context, not-covered named, labels not asked for, and the median run time.

Run: python bench/suite_eval.py ../shared/eval/mdn-http [more suites] [--corpus DIR] [--work /tmp/suite_eval]
     [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from ragstream.agents.a4_condenser import SECTIONS
from ragstream.app.controller import AppController
from ragstream.ingestion.manager import IngestionManager
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.state import SuperPrompt
from ragstream.text.chunk_ids import CITATION
from tests.helpers import unfenced

TITLES = {title: key for key, title in SECTIONS}
LABELS = ("audience", "tone", "depth", "confidence", "role")
_LABEL_LINE = re.compile(r"^\s*[-*]?\s*\**(audience|tone|depth|confidence|role)\**\s*:", re.IGNORECASE | re.MULTILINE)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def condensed(sp: SuperPrompt) -> dict[str, list[str]]:
    """The condensed context's lines by section."""
    sections: dict[str, list[str]] = {key: [] for key, _ in SECTIONS}
    current = None
    for line in sp.S_CTX_MD.splitlines():
        if line.startswith("### "):
            current = TITLES.get(line[4:].strip())
        elif line.startswith("- ") and current:
            sections[current].append(line)
    return sections


def blocks(prompt: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", prompt, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def fences_closed(prompt: str) -> bool:
    bar: str | None = None
    for line in prompt.split("\n"):
        stripped = line.rstrip()
        if bar is None:
            run = len(stripped) - len(stripped.lstrip("~"))
            if run >= 4:
                bar = "~" * run
        elif stripped == bar:
            bar = None
    return bar is None


def user_lines(prompt_md: str) -> list[str]:
    """What the user wrote that the prompt must carry verbatim: each line but headers (a header may be
    normalized), or each string value of a JSON prompt (its keys become headers)."""
    try:
        found = json.loads(prompt_md)
    except ValueError:
        found = None
    if isinstance(found, dict):
        return [v for v in found.values() if isinstance(v, str) and v.strip()]
    return [line.strip() for line in prompt_md.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@dataclass
class Verdict:
    """One case's checks: name -> passed (None: the case does not ask for it)."""

    name: str
    checks: dict[str, bool] = field(default_factory=dict)
    facts: tuple[int, int, int] = (0, 0, 0)  # key facts in the prompt, in the condensed context, of
    first: bool | None = None
    top5: bool | None = None
    seconds: float = 0.0
    kept: str = ""  # A3: candidates kept / judged
    uncovered: list[str] = field(default_factory=list)  # A3: the parts of the ask it names as not covered

    @property
    def passed(self) -> bool:
        return all(self.checks.values())


def judge(name: str, prompt_md: str, spec: dict, sp: SuperPrompt) -> Verdict:
    """The case's fields (README) and the invariants, on the finished run."""
    v = Verdict(name)
    prompt = sp.prompt_ready
    flat = _collapse(prompt)
    ctx = _collapse(sp.S_CTX_MD)
    records = sp.extras.build.excerpts if sp.extras.build is not None else []
    shown_files = [r.source for r in records]
    shown_chunks = {cid for r in records for cid in r.chunks}
    sections = condensed(sp)
    cites = {k: [line for line in lines if CITATION.search(line)] for k, lines in sections.items()}
    expected = spec.get("expected_files")
    if expected:
        top = shown_files[:5]
        want = set(expected)
        v.top5 = want <= set(top) if spec.get("require_all_expected") else bool(want & set(top))
        v.first = bool(shown_files) and shown_files[0] in want
        v.checks["answering file in first 5"] = v.top5
    facts = spec.get("key_facts", [])
    if facts:
        in_prompt = sum(_collapse(f) in flat for f in facts)
        in_ctx = sum(_collapse(f) in ctx for f in facts)
        v.facts = (in_prompt, in_ctx, len(facts))
        v.checks["key facts in prompt"] = in_prompt == len(facts)
    for text in spec.get("condensed_must_contain", []):
        v.checks[f"condensed has '{text}'"] = _collapse(text) in ctx
    for text in spec.get("system_must_contain", []):
        v.checks[f"System has '{text}'"] = _collapse(text) in _collapse(blocks(prompt).get("System", ""))
    for text in spec.get("must_contain", []):
        v.checks[f"prompt has '{text}'"] = _collapse(text) in flat
    for text in spec.get("must_not_contain", []):
        v.checks[f"prompt lacks '{text}'"] = _collapse(text) not in flat
    terms = spec.get("not_covered_terms", [])
    if terms:
        opens = " ".join(sections["open_issues"]).lower()
        v.checks["not covered named"] = any(t.lower() in opens for t in terms)
        if expected == []:
            v.checks["nothing cited when nothing answers"] = not cites["facts"] and not cites["constraints"]
    if spec.get("no_documents"):
        v.checks["no documents"] = not records and not any(cites.values())
    # What every final prompt owes its user.
    outside = unfenced(prompt)
    v.checks["every user line verbatim"] = all(_collapse(text) in flat for text in user_lines(prompt_md))
    asked = prompt_md.lower()
    unasked = [m.group(1) for m in _LABEL_LINE.finditer(outside) if m.group(1).lower() not in asked]
    v.checks["no label not asked for"] = not unasked
    v.checks["fences closed"] = fences_closed(prompt)
    cited = {cid for line in sp.S_CTX_MD.splitlines() for cid in CITATION.findall(line)}
    v.checks["condensed cites shown excerpts"] = cited <= shown_chunks
    lines = [line for line in sp.S_CTX_MD.splitlines() if line.startswith("- ")]
    v.checks["no line repeated"] = len(lines) == len(set(lines))
    a3 = sp.extras.a3
    if a3 is not None:
        v.kept = f"{a3.counts.get('keep', 0)}/{len(a3.decisions)}"
        v.uncovered = list(a3.uncovered)
    return v


def ingest(corpus: Path, work: Path, name: str) -> Settings:
    shared = load_settings(overrides={"data_dir": str(work / "shared"), "llm.provider": "local"})
    shutil.copytree(corpus, shared.data_dir / "doc_raw" / name, dirs_exist_ok=True)
    started = time.perf_counter()
    IngestionManager(shared).ingest(name)  # incremental: an index already up to date costs a scan
    print(f"ingested {corpus} in {time.perf_counter() - started:.0f} s")
    return shared


def run_case(shared: Settings, name: str, case: Path, runs: Path) -> Verdict:
    prompt_md = case.with_suffix(".md").read_text(encoding="utf-8")
    spec = json.loads(case.read_text(encoding="utf-8"))
    root = runs / name / case.stem
    shutil.rmtree(root, ignore_errors=True)
    settings = shared.model_copy(update={"data_dir": root})
    (root / "chroma_db").mkdir(parents=True)
    (root / "chroma_db" / name).symlink_to(shared.data_dir / "chroma_db" / name)
    (root / "doc_raw").mkdir()
    (root / "doc_raw" / name).symlink_to(shared.data_dir / "doc_raw" / name)  # excerpts are read back from it
    ctl = AppController(settings, checkpointer=memory_checkpointer(), services=Services(settings))
    ctl.select_project(name)
    started = time.perf_counter()
    ctl.run_full_pipeline(prompt_md, pause_after="none")
    seconds = time.perf_counter() - started
    verdict = judge(case.stem, prompt_md, spec, ctl.sp)
    verdict.seconds = seconds
    (root / "prompt.md").write_text(ctl.sp.prompt_ready, encoding="utf-8")
    return verdict


def summary(name: str, verdicts: list[Verdict]) -> dict[str, object]:
    def share(values: list[bool]) -> str:
        return f"{sum(values)}/{len(values)}" if values else "-"

    answerable = [v for v in verdicts if v.first is not None]
    uncovered = [v.checks["not covered named"] for v in verdicts if "not covered named" in v.checks]
    facts = [v.facts for v in verdicts if v.facts[2]]
    row = {
        "suite": name,
        "passing": share([v.passed for v in verdicts]),
        "file first": share([bool(v.first) for v in answerable]),
        "file in first 5": share([bool(v.top5) for v in answerable]),
        "key facts in prompt": f"{sum(f[0] for f in facts)}/{sum(f[2] for f in facts)}",
        "key facts condensed": f"{sum(f[1] for f in facts)}/{sum(f[2] for f in facts)}",
        "not covered named": share(uncovered),
        "no unasked labels": share([v.checks["no label not asked for"] for v in verdicts]),
        "median s": f"{statistics.median(v.seconds for v in verdicts):.1f}" if verdicts else "-",
    }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="+", type=Path)
    parser.add_argument("--corpus", type=Path, help="the documents, when not the suite's corpus/ folder")
    parser.add_argument("--work", type=Path, default=Path("/tmp/suite_eval"))
    parser.add_argument("--json", type=Path, help="write the per-case verdicts and summaries here")
    parser.add_argument("--only", default="*", help="the cases whose name matches this glob")
    parser.add_argument("--runs", type=Path, help="where each case's data root and prompt go (default WORK/runs)")
    args = parser.parse_args()
    rows, dump = [], {}
    for suite in args.suites:
        name = re.sub(r"[^\w-]", "-", suite.resolve().name)
        shared = ingest(args.corpus or suite / "corpus", args.work, name)
        verdicts = []
        for case in sorted((suite / "cases").glob(f"{args.only}.json")):
            v = run_case(shared, name, case, args.runs or args.work / "runs")
            failed = [check for check, ok in v.checks.items() if not ok]
            facts = f" facts {v.facts[0]}/{v.facts[2]} (condensed {v.facts[1]})" if v.facts[2] else ""
            print(
                f"{name:14} {v.name:26} {'PASS' if v.passed else 'FAIL'} first={v.first}{facts}"
                f" {v.seconds:.1f}s A3 kept {v.kept} {'; '.join(failed)}",
                flush=True,
            )
            verdicts.append(v)
        rows.append(summary(name, verdicts))
        dump[name] = {"summary": rows[-1], "cases": {v.name: {**v.__dict__} for v in verdicts}}
    keys = list(rows[0])
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(str(row[k]) for k in keys))
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
