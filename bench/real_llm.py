"""A real model end to end: the whole pipeline and a send on an OpenAI-compatible server, per stage
how the model's replies went (valid the first time / repaired / fell back), latency and tokens.

It needs a running server (llama.cpp's `llama-server` with a small instruct GGUF is enough;
`../shared/tools/real_llm_server.sh VENV PORT` builds and starts one, or pass `--start SCRIPT` and
this starts it for the run and stops it after). Without a reachable server it says so and exits 2.
Ingests the bundled sample project, runs `examples/prompt.md` (or `--prompt FILE`) with the `openai`
provider in the given structured-output mode, sends the prompt, and checks what a user would see:
every stage finished, at least one condensed line, every condensed line cites a chunk A4 was given,
the expected excerpt (`--expect`, default architecture.md) is kept and fenced, an answer streamed.
Every line the model wrote is recorded with the line check's verdict (kept, or withheld and why) and supported/total
under "a4_lines" in the --json output; bench/support_replay.py checks those lines again after a change to the check.

Run: python bench/real_llm.py --base-url http://127.0.0.1:8089/v1 --mode json_schema [--runs 1]
     python bench/real_llm.py --mode prompt        # the server enforces nothing: validation only
     python bench/real_llm.py --suite ../shared/eval/owasp --cases 10 --json side.json
     python bench/real_llm.py --suite bench/suites/black-docs --corpus <black's docs/> --cases 5
                                                   # a suite offline and with the model, side by side
                                                   # (bench/model_side_by_side.py); --a3-per-candidate
                                                   # times A3's calls as before batching and the band
                                                   # instead (one call per candidate, every candidate)
Numbers on a shared 2-core machine are noisy; the outcome counts are the point. On a busy machine
start the server with one thread (REAL_LLM_THREADS=1): llama.cpp's threads wait for each other, and
with a load of ~20 on 2 cores Qwen2.5-0.5B generated 0.3 tokens/s on 2 threads, 5.9 on 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support_replay import a4_lines, recorded_checks  # noqa: E402
from ragstream.app.session import RunSession  # noqa: E402
from ragstream.app.workspace import Workspace  # noqa: E402
from ragstream.ingestion.manager import IngestionManager  # noqa: E402
from ragstream.orchestration.checkpoint import memory_checkpointer  # noqa: E402
from ragstream.services import Services  # noqa: E402
from ragstream.settings import Settings, load_settings  # noqa: E402
from ragstream.state import SuperPrompt  # noqa: E402
from ragstream.text.chunk_ids import citations  # noqa: E402

SAMPLE = ROOT / "examples" / "sample_project"
STAGE_OF_AGENT = {"A00": "preprocess", "A2": "a2", "A3": "a3", "A4": "a4", "A5": "a5", "CRITIC": "critic"}


def reachable(base_url: str, timeout: float = 3.0) -> str | None:
    """None when the server answers /models, else why not."""
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=timeout) as response:
            json.load(response)
        return None
    except (OSError, ValueError) as exc:
        return f"no OpenAI-compatible server at {base_url} ({exc})"


def settings_for(work: Path, base_url: str, mode: str, timeout_s: float = 600, answer_tokens: int = 1500) -> Settings:
    """A CPU-bound local model is slow: one generous deadline per call and no retry of a timed-out call."""
    return load_settings(
        overrides={
            "data_dir": str(work / "data"),
            "llm.provider": "openai",
            "llm.base_url": base_url,
            "llm.api_key": os.environ.get("OPENAI_API_KEY") or "not-needed",
            "llm.structured_output": mode,
            "llm.timeout_s": timeout_s,
            "llm.max_retries": 0,
            "llm.max_concurrency": 1,
            "send.max_tokens": answer_tokens,
        }
    )


def ingest(settings: Settings, project: str) -> None:
    target = settings.data_dir / "doc_raw" / project
    if not target.exists():
        shutil.copytree(SAMPLE, target)
    IngestionManager(settings).ingest(project)


def checks(sp: SuperPrompt, tokens: list[str], expect: str) -> dict[str, Any]:
    """What a user would notice, from the final SuperPrompt."""
    a4 = sp.extras.a4
    given = set(a4.budget.kept) if a4 and a4.budget else set(sp.final_selection_ids)
    lines = [line for line in sp.s_ctx_md.splitlines() if line.startswith("- ") and not line.startswith("- none found")]
    cited = [set(citations(line)) for line in lines]
    return {
        "stage": sp.stage.value,
        "condensed_lines": len(lines),
        "every_line_cites_a_given_chunk": all(c and c <= given for c in cited),
        f"{expect}_kept_and_fenced": any(cid.startswith(expect + "@") for cid in sp.final_selection_ids)
        and f'source="{expect}"' in sp.prompt_ready,
        "a3_overruled": bool(sp.extras.a3 and sp.extras.a3.overruled),
        "a3_decisions": {
            cid: f"{d.decision}: {d.reason}" for cid, d in (sp.extras.a3.decisions.items() if sp.extras.a3 else [])
        },
        "a2_labels": sp.extras.a2.decisions if sp.extras.a2 else {},
        "a5": sp.extras.a5.model_dump(include={"kind", "rules", "source"}) if sp.extras.a5 else {},
        "S_CTX_MD": sp.s_ctx_md,  # seed name: the key earlier reports have
        "answer_streamed_tokens": len(tokens),
        "critic": (sp.answer.attempts[-1].critique if sp.answer and sp.answer.attempts else {}),
    }


def one_run(settings: Settings, project: str, prompt: str, expect: str, send: bool) -> dict[str, Any]:
    ctl = RunSession(Workspace(settings, Services(settings)), checkpointer=memory_checkpointer())
    ctl.select_project(project)
    events: list[dict[str, Any]] = []
    ctl.on_event = events.append
    tokens: list[str] = []
    started = time.monotonic()
    with recorded_checks() as checked:
        sp = ctl.run_full_pipeline(prompt, pause_after="none", send=send, on_token=tokens.append).state
    wall = time.monotonic() - started
    per_stage: dict[str, dict[str, Any]] = defaultdict(
        lambda: {
            "valid": 0,
            "repaired": 0,
            "fell_back": 0,
            "calls": 0,
            "latency_ms": 0.0,
            "tokens_in": 0,
            "tokens_out": 0,
            "notes": [],
        }
    )
    for e in events:
        if e.get("event") == "agent_call":
            row = per_stage[STAGE_OF_AGENT.get(e["agent"].split("/")[0], e["agent"])]
            row[e["outcome"]] += 1
            row["calls"] += 1
            row["latency_ms"] += e["latency_ms"]
            row["tokens_in"] += e["tokens_in"]
            row["tokens_out"] += e["tokens_out"]
            row["notes"] += e["notes"]
    for stage in (
        "a2",
        "a3",
        "a4",
        "a5",
    ):  # the stage's own tally wins: A4 also falls back when no line rests on an excerpt
        report = getattr(sp.extras, stage, None)
        if report is not None and report.llm is not None:
            per_stage[stage].update(
                valid=report.llm.valid,
                repaired=report.llm.repaired,
                fell_back=report.llm.fell_back,
                notes=report.llm.notes,
            )
    durations = {e["stage"]: e["duration_ms"] for e in events if e.get("event") == "stage_finish"}
    lines = a4_lines(checked, sp.extras.a4.reasons if sp.extras.a4 else {}, project)
    return {
        "wall_s": round(wall, 1),
        "stages": dict(per_stage),
        "stage_ms": durations,
        **checks(sp, tokens, expect),
        "a4_lines": lines,
    }


def print_run(i: int, result: dict[str, Any]) -> None:
    print(
        f"run {i}: {result['wall_s']} s, stage {result['stage']}, {result['condensed_lines']} condensed lines, "
        f"cites only given chunks: {result['every_line_cites_a_given_chunk']}, "
        + ", ".join(f"{k}: {v}" for k, v in result.items() if k.endswith("_kept_and_fenced"))
        + f", A3 overruled: {result['a3_overruled']}, answer tokens: {result['answer_streamed_tokens']}"
    )
    print(
        f"  {'stage':<10} {'calls':>5} {'valid':>5} {'repair':>6} {'fellbk':>6} {'ms':>8} {'tok_in':>7} {'tok_out':>7}"
    )
    for stage, row in result["stages"].items():
        print(
            f"  {stage:<10} {row['calls']:>5} {row['valid']:>5} {row['repaired']:>6} {row['fell_back']:>6} "
            f"{row['latency_ms']:>8.0f} {row['tokens_in']:>7} {row['tokens_out']:>7}"
        )
        for note in row["notes"][:4]:
            print(f"      - {note[:160]}")
    for cid, decision in result["a3_decisions"].items():
        print(f"  A3 {cid}: {decision[:150]}")
    print(f"  critic: {result['critic']}")


def side_by_side(args: argparse.Namespace) -> int:
    """The suite offline and with the model on one ingested corpus; prints per case and totals."""
    from bench.model_side_by_side import (
        a3_per_candidate,
        a3_request_sizes,
        band_comparison,
        judge,
        load_cases,
        model_stages,
        run_case,
    )

    settings = settings_for(args.work, args.base_url, args.mode, args.timeout, args.answer_tokens)
    offline = settings.model_copy(update={"llm": settings.llm.model_copy(update={"provider": "local"})})
    project = re.sub(r"[^a-z0-9-]", "-", args.suite.name.lower())
    target = settings.data_dir / "doc_raw" / project
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to((args.corpus or args.suite / "corpus").resolve())
    started = time.monotonic()
    IngestionManager(offline).ingest(project)
    print(f"ingested {project} in {time.monotonic() - started:.0f} s")
    rows = []
    cases = load_cases(args.suite, args.cases)
    if args.only:
        order = args.only.split(",")
        cases = sorted((c for c in cases if c[0] in order), key=lambda c: order.index(c[0]))
    for name, prompt, expect in cases:
        row: dict[str, Any] = {"case": name}
        sp, stage_ms, a3_calls = run_case(offline, project, prompt)
        row["offline"] = {**judge(sp, expect), "stage_ms": stage_ms, "a3_calls": a3_calls}
        row["a3_sizes"] = a3_request_sizes(sp, offline)
        print(f"  {name}: A3 request sizes {row['a3_sizes']}")
        if args.a3_per_candidate:
            row["a3_per_candidate"] = a3_per_candidate(sp, settings)
            print(f"  {name}: A3 one call per candidate {row['a3_per_candidate']}")
        if args.model_stages == "none" or args.a3_per_candidate:
            rows.append(row)
            if args.json:
                args.json.write_text(json.dumps(rows, indent=1, default=str))
            continue
        if args.model_stages == "all":
            with recorded_checks() as checked:
                sp_model, stage_ms, a3_calls = run_case(settings, project, prompt)
            row["model"] = {**judge(sp_model, expect), "stage_ms": stage_ms, "a3_calls": a3_calls}
            row["model"]["a4_lines"] = a4_lines(checked, row["model"]["a4"]["reasons"], project)
        else:
            row["model"] = model_stages(sp, settings, project)
            row["model"]["expected_files"] = expect.get("expected_files") or []
        row["a3_band"] = band_comparison(row["offline"], row["model"])
        rows.append(row)
        print_case(row)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1, default=str))
    sizes = [r["a3_sizes"] for r in rows]
    print(
        "A3 requests over the suite: "
        + ", ".join(f"{k} {sum(x[k] for x in sizes)}" for k in sizes[0])
        + f" (medians per prompt: tokens before {statistics.median(x['tokens_before'] for x in sizes):.0f}, "
        f"after {statistics.median(x['tokens_after'] for x in sizes):.0f})"
    )
    if args.a3_per_candidate:
        seconds = [r["a3_per_candidate"]["seconds"] for r in rows if r["a3_per_candidate"]["calls"]]
        print(
            f"A3 one call per candidate: {sum(r['a3_per_candidate']['calls'] for r in rows)} calls, median "
            + (f"{statistics.median(seconds):.1f} s per prompt ({min(seconds)}-{max(seconds)})" if seconds else "-")
        )
    elif args.model_stages != "none":
        print_totals(rows)
    return 0


def print_case(row: dict[str, Any]) -> None:
    off, mod = row["offline"], row["model"]
    failed = [k for k, ok in off["checks"].items() if not ok]
    print(f"== {row['case']}")
    print(
        f"  offline: passed {off['passed']} failed {failed} key facts {off['key_facts_carried']}, A3 "
        f"{off['stage_ms'].get('a3', 0) / 1000:.1f} s, kept {off['a3']['kept']}, A4 lines {off['a4']['cited_lines']} "
        f"(verbatim {off['a4']['verbatim_lines']}), labels {off['a2']['label_lines']}"
    )
    if "checks" in mod:
        failed = [k for k, ok in mod["checks"].items() if not ok]
        print(
            f"  model:   passed {mod['passed']} failed {failed} key facts {mod['key_facts_carried']}, A3 "
            f"{mod['stage_ms'].get('a3', 0) / 1000:.1f} s ({mod['a3_calls']} calls), kept {mod['a3']['kept']}, "
            f"A4 lines {mod['a4']['cited_lines']} (verbatim {mod['a4']['verbatim_lines']}, withheld "
            f"{len(mod['a4']['withheld'])}), labels {mod['a2']['label_lines']}"
        )
        for line in mod["a4"]["other_lines"]:
            print(f"  A4 line not verbatim in its chunk: {line[:220]}")
        print_lines(mod["a4_lines"])
    else:
        a3 = mod["a3"]
        answering = [f for f in mod["expected_files"] if f in a3["kept_files"]]
        print(
            f"  model:   A2 {mod['a2']['seconds']} s, labels applied {mod['a2']['applied']}; A3 {a3['seconds']} s "
            f"({a3['calls']} calls, {a3['tokens_in']} tokens in, {a3['tokens_out']} out), kept {len(a3['kept'])}, "
            f"{a3['judged_by']}, answering files kept {answering or 'none'} of {mod['expected_files']}, {a3['llm']}"
        )
    band = row["a3_band"]
    print(f"  A3 band: agreed {len(band['agreed'])}, model added {band['added']}, model dropped {band['dropped']}")
    if mod["a3"]["overruled"]:
        print(f"  A3 overruled: {mod['a3']['overruled']}")
    for k, v in mod["a2"]["model_dropped"].items():
        print(f"  A2 {k}: {v}")


def print_lines(lines: dict[str, Any]) -> None:
    """The model's lines with the line check's verdicts, and supported/total."""
    print(f"  A4 model lines supported/total: {lines['supported']}/{lines['total']}")
    for call in lines["calls"]:
        for line in call["lines"]:
            verdict = "kept    " if line["supported"] else f"withheld ({line['reason'][:160]})"
            print(f"    {verdict}: {line['text'][:200]}")
    for line in lines["unchecked"]:
        print(f"    withheld ({line['reason']}): {line['text'][:200]}")


def print_side(name: str, results: list[dict[str, Any]]) -> None:
    """One side's final prompts over the suite: cases and checks passed, answering files kept, labels, A4 lines
    (verbatim in their chunk, withheld), A3's median and range of seconds per prompt that retrieved."""
    checks = [ok for r in results for ok in r["checks"].values()]
    a3_s = sorted(r["stage_ms"].get("a3", 0) / 1000 for r in results if r["a3"]["kept"] or r.get("a3_calls"))
    kept = [r["checks"]["answering_file_kept"] for r in results if "answering_file_kept" in r["checks"]]
    print(
        f"{name}: cases passed {sum(r['passed'] for r in results)}/{len(results)}, "
        f"checks {sum(checks)}/{len(checks)}, "
        f"answering file kept {sum(kept)}/{len(kept)}, labels with stated evidence only "
        f"{sum(r['checks']['labels_only_with_stated_evidence'] for r in results)}/{len(results)}, cited lines "
        f"{sum(r['a4']['cited_lines'] for r in results)} (verbatim {sum(r['a4']['verbatim_lines'] for r in results)}, "
        f"withheld {sum(len(r['a4']['withheld']) for r in results)}), A3 median "
        + (f"{statistics.median(a3_s):.1f} s ({a3_s[0]:.1f}-{a3_s[-1]:.1f})" if a3_s else "-")
    )


def print_totals(rows: list[dict[str, Any]]) -> None:
    print_side("offline", [r["offline"] for r in rows])
    models = [r["model"] for r in rows]
    if "checks" in models[0]:  # every stage ran with the model: its final prompts, judged as offline's
        print_side("model", models)
        print(
            "model's A4 lines supported/total: "
            f"{sum(m['a4_lines']['supported'] for m in models)}/{sum(m['a4_lines']['total'] for m in models)}"
        )
    else:
        answering = [
            any(f in m["a3"]["kept_files"] for f in m["expected_files"]) for m in models if m["expected_files"]
        ]
        seconds = sorted(m["a3"]["seconds"] for m in models)
        print(
            f"model (A2, A3): answering file kept {sum(answering)}/{len(answering)}, labels applied "
            f"{sum(len(m['a2']['applied']) for m in models)} (model labels dropped "
            f"{sum(len(m['a2']['model_dropped']) for m in models)}), A3 calls {sum(m['a3']['calls'] for m in models)}, "
            f"tokens in {sum(m['a3']['tokens_in'] for m in models)}, A3 median {statistics.median(seconds):.1f} s "
            f"(max {seconds[-1]:.1f})"
        )
    band = {k: sum(len(r["a3_band"][k]) for r in rows) for k in ("agreed", "added", "dropped")}
    overruled = sum(bool(r["model"]["a3"]["overruled"]) for r in rows)
    print(f"A3 in the band: {band}; overruled by rule in {overruled} cases")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8089/v1"))
    parser.add_argument("--mode", default="auto", choices=["auto", "json_schema", "json_object", "prompt"])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600, help="seconds per model call")
    parser.add_argument("--answer-tokens", type=int, default=1500, help="cap on the sent answer's tokens")
    parser.add_argument("--prompt", type=Path, default=ROOT / "examples" / "prompt.md")
    parser.add_argument("--expect", default="architecture.md", help="a source file the prompt's answer rests on")
    parser.add_argument("--no-send", action="store_true")
    parser.add_argument("--work", type=Path, default=ROOT / "data" / "bench-real-llm")
    parser.add_argument("--start", help="a script that starts the server: SCRIPT VENV PORT, PID on its last line")
    parser.add_argument("--venv", default="/tmp/real-llm-venv")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--suite", type=Path, help="a labelled suite (../shared/eval/<name>): offline vs the model")
    parser.add_argument("--cases", type=int, default=10, help="with --suite: its first N cases")
    parser.add_argument(
        "--corpus", type=Path, help="with --suite: its documents, for a suite that holds only cases (bench/suites/)"
    )
    parser.add_argument(
        "--a3-per-candidate",
        action="store_true",
        help="with --suite: instead of the model's run, time A3's calls as before batching and the band (one A3/v1 "
        "call per candidate about every candidate)",
    )
    parser.add_argument("--only", help="with --suite: these cases (comma-separated names), in this order")
    parser.add_argument(
        "--model-stages",
        choices=["a2a3", "all", "none"],
        default="a2a3",
        help="with --suite: the model runs A2 and A3 on the offline run's state (a slow server), every stage, or "
        "none (offline only, with A3's request sizes before and after batching)",
    )
    args = parser.parse_args()
    pid = None
    if args.start:
        port = re.search(r":(\d+)", args.base_url.split("//", 1)[1])
        out = subprocess.run(
            ["bash", args.start, args.venv, port.group(1) if port else "8089"],
            check=True,
            capture_output=True,
            text=True,
        )
        pid = int(out.stdout.strip().splitlines()[-1])
    try:
        why = reachable(args.base_url)
        if why:
            print(f"skipped: {why}; start one with ../shared/tools/real_llm_server.sh or pass --start", file=sys.stderr)
            return 2
        if args.suite:
            return side_by_side(args)
        settings = settings_for(args.work, args.base_url, args.mode, args.timeout, args.answer_tokens)
        ingest(settings, "sample")
        prompt = args.prompt.read_text(encoding="utf-8")
        results = []
        for i in range(1, args.runs + 1):
            result = one_run(settings, "sample", prompt, args.expect, not args.no_send)
            print_run(i, result)
            results.append(result)
        print(
            f"mode {args.mode} on {args.base_url}: median wall {statistics.median(r['wall_s'] for r in results)} s "
            f"over {len(results)} run(s)"
        )
        if args.json:
            args.json.write_text(json.dumps(results, indent=1, default=str))
        return 0
    finally:
        if pid:
            os.kill(pid, 15)


if __name__ == "__main__":
    sys.exit(main())
