"""A run's figures: per check and in total, retrieval per stage, tokens and latency; the terminal summary.

`summarize` turns a run's per-case results into the totals every surface shows (terminal, `--json`, HTML,
`--min`), so each reads the same numbers.
"""

from __future__ import annotations

import statistics
from typing import Any

from ragstream.evaluation.metrics import STAGE_METRICS, percentile
from ragstream.evaluation.runner import STAGES


def summarize(run: dict[str, Any]) -> dict[str, Any]:
    """Totals over a run's cases (a saved run's dict, or EvalRun.as_dict())."""
    cases = run["cases"]
    checks: dict[str, list[int]] = {}
    phrases: dict[str, list[int]] = {}  # per check of phrases: how many were found, of how many looked for
    for case in cases:
        for check in case.get("checks", []):
            row = checks.setdefault(check["name"], [0, 0])
            row[0] += check["passed"]
            row[1] += 1
            if check.get("wanted"):
                count = phrases.setdefault(check["name"], [0, 0])
                count[0] += check["wanted"] - len(check["lines"])
                count[1] += check["wanted"]
    judged = [c for c in cases if "retrieval" in c]
    retrieval = {
        stage: {m: statistics.fmean(c["retrieval"][stage][m] for c in judged) for m in STAGE_METRICS}
        for stage in STAGES
        if judged
    }
    ran = [c for c in cases if not c.get("error")]
    stages = list(dict.fromkeys(s for c in ran for s in c.get("latency_ms", {})))
    latency = {
        s: {"median": percentile(v, 50), "p95": percentile(v, 95)}
        for s in stages
        if (v := [c["latency_ms"][s] for c in ran if s in c["latency_ms"]])
    }
    tokens = {
        kind: {"median": percentile(v, 50), "p95": percentile(v, 95)}
        for kind in ("prompt", "excerpts")
        if (v := [c["tokens"][kind] for c in ran])
    }
    passed = sum(bool(c.get("passed")) for c in cases)
    return {
        "cases": len(cases),
        "errors": sum(bool(c.get("error")) for c in cases),
        "cases_passed": passed,
        "pass_rate": passed / len(cases) if cases else 0.0,
        "score": statistics.fmean(c.get("score", 0.0) for c in cases) if cases else 0.0,
        "checks": {name: {"passed": p, "of": n, "rate": p / n} for name, (p, n) in checks.items()},
        "phrases": {name: {"found": f, "of": n, "rate": f / n} for name, (f, n) in phrases.items()},
        "retrieval_cases": len(judged),
        "retrieval": retrieval,
        "tokens": tokens,
        "latency_ms": latency,
    }


def options_text(options: dict[str, Any]) -> str:
    """The run options that were set, as `key=value` (the rest are the configuration's)."""
    shown = {k: v for k, v in options.items() if v not in (None, [], False) and k not in ("pause_after", "manual")}
    return ", ".join(f"{k}={v}" for k, v in shown.items()) or "defaults"


def metric_values(summary: dict[str, Any]) -> dict[str, float]:
    """The figures `--min KEY=VALUE` can name: pass_rate, score, check.NAME, STAGE.METRIC (fused.ndcg@10)."""
    values = {"pass_rate": summary["pass_rate"], "score": summary["score"]}
    values.update({f"check.{name}": row["rate"] for name, row in summary["checks"].items()})
    for stage, metrics in summary["retrieval"].items():
        values.update({f"{stage}.{m}": v for m, v in metrics.items()})
    return values


def terminal(run: dict[str, Any], summary: dict[str, Any]) -> str:
    """The summary a person reads after a run."""
    out = [
        f"suite {run['suite']} ({run['kind']}), project {run['project']}: {summary['cases']} cases, "
        f"config {run['config_digest']}, corpus {run['corpus_fingerprint']}, options: {options_text(run['options'])}",
        f"ingest: {run['ingest']}",
        f"cases passed: {summary['cases_passed']}/{summary['cases']} ({summary['pass_rate']:.0%}), "
        f"mean check score {summary['score']:.3f}" + (f", {summary['errors']} errors" if summary["errors"] else ""),
        "",
        "checks:",
    ]
    for name, row in summary["checks"].items():
        out.append(f"  {name:24} {row['passed']:4}/{row['of']:<4} {row['rate']:6.1%}")
    out.append(f"  (condensed lines judged by: {run['support_check']})")
    if summary.get("phrases"):
        out += ["", "phrases found (each phrase of every case):"]
        for name, row in summary["phrases"].items():
            out.append(f"  {name:24} {row['found']:4}/{row['of']:<4} {row['rate']:6.1%}")
    if summary["retrieval"]:
        out += ["", f"retrieval ({summary['retrieval_cases']} cases with relevant passages):"]
        out.append("  " + f"{'stage':10}" + "".join(f"{m:>10}" for m in STAGE_METRICS))
        for stage, metrics in summary["retrieval"].items():
            out.append("  " + f"{stage:10}" + "".join(f"{metrics[m]:10.3f}" for m in STAGE_METRICS))
    if summary["tokens"]:
        out += [
            "",
            "tokens:   "
            + ", ".join(f"{k} median {v['median']:.0f} p95 {v['p95']:.0f}" for k, v in summary["tokens"].items()),
        ]
    if summary["latency_ms"]:
        out.append(
            "latency:  "
            + ", ".join(f"{s} {v['median']:.0f}/{v['p95']:.0f}" for s, v in summary["latency_ms"].items())
            + " ms (median/p95)"
        )
    failing = [c for c in run["cases"] if not c.get("passed")]
    if failing:
        out += ["", "failing cases:"]
        for case in failing:
            if case.get("error"):
                out.append(f"  {case['name']}: {case['error']}")
                continue
            names = [c["name"] for c in case["checks"] if not c["passed"] and not c["soft"]]
            out.append(f"  {case['name']}: {', '.join(names)}")
    return "\n".join(out)
