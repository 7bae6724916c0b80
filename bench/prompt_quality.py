"""Final-prompt quality on the documentation sets nobody tuned for (tests/quality cases on attrs and click,
or other corpora: --corpora attrs,click,streamlit).

For every case with expectations on those corpora it runs the whole pipeline offline (the `local`
provider), as the quality suite does, and prints per case and in total: condensed lines, useful
condensed lines (lines containing one of the case's `useful` terms, the words an answer needs,
written before tuning), prompt tokens, excerpt tokens, and whether the answering file was selected.
It also prints how A3 decided, with file-level labels (rough: a long answering file has chunks on
other topics): the answering file's candidates kept, the other candidates dropped, and for asks no
document covers, the candidates dropped and the asks where nothing was kept.

Run: python bench/prompt_quality.py [--work /tmp/prompt_quality] [--corpora attrs,click]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
from pathlib import Path

from ragstream.app.controller import AppController
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.services import Services
from tests.quality.test_quality import CASES, _condensed, _files, _project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/prompt_quality"))
    parser.add_argument("--corpora", default="attrs,click", help="the cases whose corpora are all among these")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    total = useful_total = found = answerable = 0
    gate = {"answering kept": [0, 0], "others dropped": [0, 0], "uncovered dropped": [0, 0], "nothing kept": [0, 0]}
    ratios: list[float] = []
    for case in CASES:
        if not set(case["corpora"]) <= set(args.corpora.split(",")):
            continue
        shared, project = _project(args.work, case["corpora"])
        ctl = AppController(shared, checkpointer=memory_checkpointer(), services=Services(shared))
        ctl.select_project(project)
        ctl.run_full_pipeline(case["prompt"], pause_after="none")
        sp, budget = ctl.sp, ctl.services.budget
        lines = [line for section in _condensed(sp).values() for line in section if "[" in line]
        useful = [line for line in lines if any(t.lower() in line.lower() for t in case.get("useful", []))]
        prompt_tokens, excerpt_tokens = budget.count(sp.prompt_ready), budget.count(sp.Attachments_MD)
        hit = ""
        if "selected" in case:
            answerable += 1
            found += set(case["selected"]) <= _files(sp.final_selection_ids)
            hit = (
                "answering file selected"
                if set(case["selected"]) <= _files(sp.final_selection_ids)
                else "answering file MISSING"
            )
        decisions = sp.extras.a3.decisions if sp.extras.a3 is not None else {}
        for cid, d in decisions.items():
            if d.decision == "drop_duplicate":
                continue
            mine = _files([cid]) <= set(case.get("selected", []))
            key = "uncovered dropped" if case.get("not_covered") else "answering kept" if mine else "others dropped"
            gate[key][0] += (d.decision == "keep") == (key == "answering kept")
            gate[key][1] += 1
        if case.get("not_covered"):
            gate["nothing kept"][0] += not any(d.decision == "keep" for d in decisions.values())
            gate["nothing kept"][1] += 1
        if "useful" in case:
            total += len(lines)
            useful_total += len(useful)
        if excerpt_tokens:
            ratios.append(prompt_tokens / excerpt_tokens)
        print(
            f"{case['id']:52} lines {len(useful)}/{len(lines)} prompt {prompt_tokens} excerpts {excerpt_tokens} {hit}"
        )
    print(
        f"useful/total condensed lines (cases with `useful`): {useful_total}/{total}"
        f" = {useful_total / max(total, 1):.2f}"
    )
    print(
        f"prompt tokens / excerpt tokens: median {statistics.median(ratios):.2f} over {len(ratios)} prompts with "
        "excerpts"
    )
    print(f"answering file selected: {found}/{answerable}")
    print("A3: " + ", ".join(f"{key} {n}/{of} = {n / max(of, 1):.2f}" for key, (n, of) in gate.items()))


if __name__ == "__main__":
    main()
