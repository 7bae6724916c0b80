"""What the condensed context carries, on the labelled suites (../shared/eval/*) and the quality suite's cases.

For every case it runs the whole pipeline offline (the `local` provider) and prints, per case and per suite:
the `condensed_must_contain` phrases inside the condensed context, the `key_facts` inside it and anywhere in the
final prompt (whitespace collapsed, case ignored), the condensed lines that cite a chunk, and among them the lines
that answer nothing on their own: headings or bold labels, bare links, cross-references ("see X", "the table
below"), lead-ins without items; plus filler lines ("none found ...") and the run's median time. With
`--quality`, the quality suite's cases (tests/quality/cases.yaml) that expect text in a condensed section count
that text as `condensed_must_contain`. A suite's corpus is ingested once under --work and reused.

Run: python bench/condensed_eval.py [--suites ../shared/eval/mdn-http,...] [--quality] [--work /tmp/condensed_eval]
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

from ragstream.app.session import RunSession
from ragstream.app.workspace import Workspace
from ragstream.ingestion.manager import IngestionManager
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.services import Services
from ragstream.settings import Settings, load_settings
from ragstream.text.chunk_ids import CITATION, source_of

SUITES = Path("/work/shared/eval")
_HEADING = re.compile(r"^(?:#+\s|\*\*[^*]+\*\*:?$|__[^_]+__:?$)")
_LINK = re.compile(r"^\W*(?:<?https?://\S+>?|\[[^\]]*\]\([^)]*\))\W*$")
_LINKED = re.compile(r"\[[^\]]*\]\([^)]*\)|<?https?://\S+>?")
_CROSS = re.compile(r"^(?:see|refer to)\b|\b(?:table|example|list|diagram) (?:below|above)\b", re.IGNORECASE)
_FILLER = re.compile(r"none found|nothing found", re.IGNORECASE)


def flat(text: str) -> str:
    return " ".join(text.split()).lower()


@dataclass
class Tally:
    cases: int = 0
    must: list[int] = field(default_factory=lambda: [0, 0])
    key_condensed: list[int] = field(default_factory=lambda: [0, 0])
    key_prompt: list[int] = field(default_factory=lambda: [0, 0])
    lines: int = 0
    bad: dict[str, int] = field(default_factory=lambda: {"heading": 0, "link": 0, "cross-ref": 0, "lead-in": 0})
    filler: int = 0
    where: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("in a condensed excerpt", "not in one"), 0))
    first5: list[int] = field(default_factory=lambda: [0, 0])
    seconds: list[float] = field(default_factory=list)

    def line(self, name: str) -> str:
        def share(pair: list[int]) -> str:
            return f"{pair[0]}/{pair[1]}"

        bad = ", ".join(f"{k} {v}" for k, v in self.bad.items())
        median = statistics.median(self.seconds) if self.seconds else 0.0
        return (
            f"{name}: {self.cases} cases | condensed_must_contain carried {share(self.must)} | key facts in condensed "
            f"{share(self.key_condensed)} (missed: {self.where}), in prompt {share(self.key_prompt)} | answering "
            f"file in first 5 {share(self.first5)} | cited lines {self.lines}: {bad} | filler lines {self.filler} | "
            f"run median {median:.2f} s"
        )


def kind_of(text: str) -> str:
    """Why a condensed line answers nothing on its own, or '' when it may."""
    if _HEADING.match(text):
        return "heading"
    if _LINK.match(text) or (_LINKED.search(text) and len(_LINKED.sub("", text).split()) < 4):
        return "link"
    if _CROSS.search(text):
        return "cross-ref"
    if text.endswith(":"):
        return "lead-in"
    return ""


def settings_for(work: Path, name: str) -> Settings:
    return load_settings(overrides={"data_dir": str(work / name), "llm.provider": "local"})


def ingested(work: Path, name: str, corpus: Path) -> Settings:
    settings = settings_for(work, name)
    if not (settings.data_dir / "chroma_db" / name).exists():
        shutil.copytree(corpus, settings.data_dir / "doc_raw" / name, dirs_exist_ok=True)
        IngestionManager(settings).ingest(name)
    return settings


def run_case(
    settings: Settings, project: str, prompt: str, expect: dict, tally: Tally, show: bool
) -> tuple[str, list[str]]:
    ctl = RunSession(Workspace(settings, Services(settings)), checkpointer=memory_checkpointer())
    ctl.select_project(project)
    started = time.perf_counter()
    sp = ctl.run_full_pipeline(prompt, pause_after="none").state
    tally.seconds.append(time.perf_counter() - started)
    condensed, whole = flat(sp.s_ctx_md), flat(sp.prompt_ready)
    tally.cases += 1
    missing = []
    for phrase in expect.get("condensed_must_contain", []):
        tally.must[1] += 1
        tally.must[0] += flat(phrase) in condensed
        missing += [] if flat(phrase) in condensed else [phrase]
    by_id = sp.chunk_by_id()
    given = flat(" ".join(by_id[cid].text for cid in sp.final_selection_ids if cid in by_id))
    for phrase in expect.get("key_facts", []):
        if flat(phrase) not in condensed:
            tally.where["in a condensed excerpt" if flat(phrase) in given else "not in one"] += 1
        tally.key_condensed[0] += flat(phrase) in condensed
        tally.key_prompt[0] += flat(phrase) in whole
        tally.key_condensed[1] += 1
        tally.key_prompt[1] += 1
    expected = expect.get("expected_files") or []
    if expected:
        first = [source_of(cid) for cid in sp.final_selection_ids[:5]]
        tally.first5[1] += 1
        tally.first5[0] += any(p.endswith(e) or e.endswith(p) for p in first for e in expected)
    bad = []
    for raw in sp.s_ctx_md.splitlines():
        if not raw.startswith("- "):
            continue
        tally.filler += bool(_FILLER.search(raw))
        if CITATION.search(raw):
            tally.lines += 1
            text = " ".join(CITATION.sub("", raw[2:]).split())
            kind = kind_of(text)
            if kind:
                tally.bad[kind] += 1
                bad.append(f"{kind}: {text[:90]}")
    if show:
        print("   s_ctx_md:\n      " + sp.s_ctx_md.replace("\n", "\n      "))
    return sp.s_ctx_md, missing + bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/condensed_eval"))
    parser.add_argument("--suites", default=",".join(str(p) for p in sorted(SUITES.iterdir()) if p.is_dir()))
    parser.add_argument("--quality", action="store_true", help="also the quality suite's condensed expectations")
    parser.add_argument("--show", action="store_true", help="print each case's condensed context")
    parser.add_argument("--json", type=Path, help="write every case's condensed context here")
    args = parser.parse_args()
    out: dict[str, str] = {}
    totals: list[str] = []
    for suite in (Path(s) for s in args.suites.split(",") if s):
        settings, tally = ingested(args.work, suite.name, suite / "corpus"), Tally()
        for case in sorted((suite / "cases").glob("*.md")):
            expect = json.loads(case.with_suffix(".json").read_text(encoding="utf-8"))
            text, notes = run_case(settings, suite.name, case.read_text(encoding="utf-8"), expect, tally, args.show)
            out[f"{suite.name}/{case.stem}"] = text
            print(f"{suite.name}/{case.stem:28} " + ("; ".join(notes) or "ok"))
        totals.append(tally.line(suite.name))
        print(totals[-1])
    if args.quality:
        from tests.quality.test_quality import CASES, _project

        tally = Tally()
        for case in CASES:
            wanted = [t for texts in case.get("condensed", {}).values() for t in texts]
            if not wanted or "expect_error" in case or case.get("options"):
                continue
            settings, project = _project(args.work / "quality", case["corpora"])
            text, notes = run_case(settings, project, case["prompt"], {"condensed_must_contain": wanted}, tally, False)
            out[f"quality/{case['id']}"] = text
            print(f"quality/{case['id']:40} " + ("; ".join(notes) or "ok"))
        totals.append(tally.line("quality (cases.yaml condensed)"))
        print(totals[-1])
    print("\n".join(["", "TOTALS", *totals]))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
