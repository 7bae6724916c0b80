"""A model's condensed lines on a labelled suite: how many A4 keeps, and what its support check withholds, why.

For each case the pipeline runs offline up to A4 (the same selection for every run), then A4 is called once
with the model server (`--url`, OpenAI protocol) on that selection. Every line the model wrote that cites an
excerpt it was given is printed with A4's verdict: kept, or withheld with the reason (before this check,
all of them were kept). The closest sentence of the cited excerpt is printed beside each line, to judge
support by reading. Totals: lines citing a given excerpt, lines kept, lines withheld.

Run: python bench/a4_model_lines.py --url http://127.0.0.1:8089/v1 [--suite ../shared/eval/mdn-http] [--cases 10]
     [--a4-tokens 800] (a smaller excerpt budget for a slow CPU server)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.condensed_eval import ingested
from ragstream.app.session import RunSession
from ragstream.app.workspace import Workspace
from ragstream.condensing.condenser import condense
from ragstream.condensing.support import SupportCheck
from ragstream.errors import RagstreamError
from ragstream.gate.ask_parts import asking_parts
from ragstream.orchestration.checkpoint import memory_checkpointer
from ragstream.rendering.ask import normalized_ask
from ragstream.services import Services
from ragstream.stages import Stage
from ragstream.text.chunk_ids import CITATION
from ragstream.text.sentences import TYPED, split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--suite", type=Path, default=Path("/work/shared/eval/mdn-http"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/condensed_eval"))
    parser.add_argument("--cases", type=int, default=10)
    parser.add_argument("--skip", type=int, default=0, help="cases to skip first (measured before)")
    parser.add_argument("--a4-tokens", type=int, default=0, help="the excerpts' token ceiling for the model call")
    parser.add_argument("--json", type=Path, help="write every line and verdict here")
    args = parser.parse_args()
    offline = ingested(args.work, args.suite.name, args.suite / "corpus")
    model = offline.model_copy(
        update={
            "llm": offline.llm.model_copy(
                update={
                    "provider": "openai",
                    "base_url": args.url,
                    "timeout_s": 900.0,
                    "max_retries": 0,
                    "max_concurrency": 1,
                }
            ),
            "budget": offline.budget.model_copy(
                update={"ceilings": {**offline.budget.ceilings, "a4": args.a4_tokens or offline.budget.ceilings["a4"]}}
            ),
        }
    )
    services, model_services = Services(offline), Services(model)
    cases = [c for c in sorted((args.suite / "cases").glob("*.md"))]
    rows: list[dict] = []
    total = kept = withheld = 0
    for case in cases[args.skip : args.skip + args.cases]:
        ctl = RunSession(Workspace(offline, services), checkpointer=memory_checkpointer())
        ctl.select_project(args.suite.name)
        sp = ctl.run_full_pipeline(case.read_text(encoding="utf-8"), pause_after="none").state
        by_id = sp.chunk_by_id()
        selection = [by_id[cid] for cid in sp.selection_before(Stage.A4) if cid in by_id]
        if not selection:
            print(f"{case.stem}: no excerpts reach A4")
            continue
        ask = normalized_ask(sp)
        check = SupportCheck(model.condenser.support, services.embedder.embed_together)
        started = time.perf_counter()
        try:
            text, _, report = condense(
                ask,
                selection,
                model_services.runner,
                model_services.budget,
                lambda why: ("", [], sp.extras.a4),  # noqa: B023 - the offline result is not measured here
                check,
                split(ask, TYPED) + asking_parts(sp, offline),
            )
        except RagstreamError as exc:  # a slow server's time-out: this case is not measured
            print(f"\n=== {case.stem}: not measured ({exc})")
            continue
        seconds = time.perf_counter() - started
        lines = [line[2:] for line in text.splitlines() if line.startswith("- ") and CITATION.search(line)]
        out = [line for line in report.unsupported_lines if CITATION.search(line)]
        notes = report.llm.notes if report.llm else []
        print(f"\n=== {case.stem} ({seconds:.0f} s): {len(lines)} kept, {len(out)} withheld {notes}")
        for line in lines:
            print(f"  KEPT     {line}")
        for line in out:
            print(f"  WITHHELD {line}\n           reason: {report.reasons.get(line, '')}")
        total += len(lines) + len(out)
        kept += len(lines)
        withheld += len(out)
        rows.append({"case": case.stem, "kept": lines, "withheld": {line: report.reasons.get(line) for line in out}})
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(f"\nlines citing a given excerpt {total}: kept {kept}, withheld {withheld}")


if __name__ == "__main__":
    main()
