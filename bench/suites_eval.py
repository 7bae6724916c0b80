"""Every labelled suite in one run: the shared suites (../shared/eval/*) and this repository's untuned ones
(bench/suites/*), each through `ragstream eval` exactly as a user runs it, then one table of the README's fields
per suite, shared and own apart (issue 36's "Must show"; which own suites were read while tuning, the notes say).

A bench suite's corpus is not in git (SOURCE.txt says where it comes from); `--corpora DIR` holds one folder
per suite, DIR/<suite>, built as its SOURCE.txt says. A suite without its folder there is left out and said so.
Each run's JSON is kept under --out/<tag>/<suite>.json; `--against TAG` lists, case by case, what changed since
that run (passing, key facts in the prompt and in the condensed context) and how many final prompts differ.

Run: python bench/suites_eval.py --corpora /tmp/corpora --tag after [--against before] [--work data/suites_eval]
     [--shared ../shared/eval]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWN = ROOT / "bench" / "suites"
FIELDS = {  # column: the summary's check
    "answering file first": "expected_first",
    "not covered named": "not_covered_named",
    "no unasked label": "no_unasked_label",
}


Suite = tuple[str, Path, Path | None]  # name, case folder, corpus folder (None: the suite holds its own)


def suites(shared: Path, corpora: Path | None) -> list[Suite]:
    """Every suite to run: the shared ones, then those of bench/suites whose corpus is at hand."""
    found: list[Suite] = []
    if shared.is_dir():
        found += [(p.name, p, None) for p in sorted(shared.iterdir()) if (p / "cases").is_dir()]
    for folder in sorted(p for p in OWN.iterdir() if (p / "cases").is_dir()):
        corpus = corpora / folder.name if corpora is not None else None
        if corpus is None or not corpus.is_dir():
            print(f"skipped {folder.name}: no corpus at {corpus} (build it as its SOURCE.txt says)", file=sys.stderr)
            continue
        found.append((folder.name, folder, corpus))
    return found


def run_one(name: str, cases: Path, corpus: Path | None, work: Path, out: Path) -> dict:
    """One suite through the CLI, its JSON kept in `out`."""
    command = [sys.executable, "-m", "ragstream.app.cli", "eval", str(cases), "--project", f"eval-{name}", "--json"]
    command += ["--corpus", str(corpus)] if corpus is not None else []
    env = {**os.environ, "RAGSTREAM_DATA_DIR": str(work)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name}: ragstream eval exited {done.returncode}\n{done.stderr[-2000:]}")
    (out / f"{name}.json").write_text(done.stdout, encoding="utf-8")
    return json.loads(done.stdout)


def _of(summary: dict, check: str) -> str:
    found = summary["checks"].get(check)
    return f"{found['passed']}/{found['of']}" if found else "-"


def _phrases(summary: dict, key: str) -> str:
    found = summary["phrases"].get(key)
    return f"{found['found']}/{found['of']}" if found else "-"


def table(results: dict[str, dict], shared: set[str]) -> None:
    head = ["suite", "kind", "cases passing", "key facts in prompt", "key facts condensed", *FIELDS, "median ms"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    passed = total = 0
    for name, result in results.items():
        summary, cases = result["summary"], result["run"]["cases"]
        kind = "shared" if name in shared else "own"
        passed, total = passed + summary["cases_passed"], total + len(cases)
        row = [name, kind, f"{summary['cases_passed']}/{len(cases)}", _phrases(summary, "key_facts")]
        row += [_phrases(summary, "key_facts_condensed"), *(_of(summary, check) for check in FIELDS.values())]
        row.append(f"{summary['latency_ms']['total']['median']:.0f}")
        print("| " + " | ".join(row) + " |")
    print(f"\ntotal: {passed}/{total} cases passing")


def _case_figures(case: dict) -> tuple[bool, str, str]:
    checks = {c["name"]: c for c in case["checks"]}

    def count(name: str) -> str:
        return checks[name]["detail"].split(" ")[0] if name in checks else "-"

    return case["passed"], count("key_facts"), count("key_facts_condensed")


def changes(before: Path, results: dict[str, dict]) -> None:
    """Case by case, what differs from the run kept in `before`."""
    changed = 0
    for name, result in results.items():
        path = before / f"{name}.json"
        if not path.is_file():
            print(f"{name}: no run in {before}")
            continue
        old = {c["name"]: c for c in json.loads(path.read_text(encoding="utf-8"))["run"]["cases"]}
        for case in result["run"]["cases"]:
            was = old.get(case["name"])
            if was is None:
                continue
            if _case_figures(was) != _case_figures(case):
                (a, kf_a, cond_a), (b, kf_b, cond_b) = _case_figures(was), _case_figures(case)
                figures = f"passing {a} -> {b}, key facts {kf_a} -> {kf_b}, condensed {cond_a} -> {cond_b}"
                print(f"{name}/{case['name']}: {figures}")
            changed += was["final_prompt"] != case["final_prompt"]
    print(f"final prompts changed: {changed}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", type=Path, help="a folder holding each bench suite's corpus as <suite>/")
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "eval", help="the shared suites' folder")
    ap.add_argument("--work", type=Path, default=ROOT / "data" / "suites_eval", help="the data root runs ingest into")
    ap.add_argument("--out", type=Path, default=None, help="where runs are kept (default: WORK/runs)")
    ap.add_argument("--tag", default="latest", help="this run's name under --out")
    ap.add_argument("--against", help="a run kept under --out to list the changes against")
    ap.add_argument("--jobs", type=int, default=2, help="suites run at once")
    args = ap.parse_args()
    runs = args.out or args.work / "runs"
    out = runs / args.tag
    out.mkdir(parents=True, exist_ok=True)
    todo = suites(args.shared, args.corpora)
    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        done = pool.map(lambda s: run_one(s[0], s[1], s[2], args.work, out), todo)
        results = dict(zip((name for name, _, _ in todo), done, strict=True))
    table(results, {name for name, _, corpus in todo if corpus is None})
    if args.against:
        changes(runs / args.against, results)


if __name__ == "__main__":
    main()
