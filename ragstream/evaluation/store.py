"""Saved runs (`--save NAME`) and what changed against one (`--compare NAME`), case by case with a paired test.

A saved run is one JSON file under the data root (`eval/NAME.json`): its configuration digest, corpus
fingerprint, options and every case's results, so a later run on the same corpus can be compared case by
case. Runs over different corpora are refused: their per-case scores do not pair.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from ragstream.errors import InputError
from ragstream.evaluation.checks import CHECK_NAMES
from ragstream.evaluation.metrics import STAGE_METRICS, wilcoxon_signed_rank
from ragstream.evaluation.report import options_text, summarize
from ragstream.evaluation.runner import STAGES
from ragstream.settings import Settings
from ragstream.storage.atomic import write_atomic
from ragstream.tenancy.projects import validate_project_name


class CompareError(InputError):
    """Two runs that cannot be compared (another corpus), or a saved run that is not there."""


def runs_dir(settings: Settings) -> Path:
    return settings.data_dir / "eval"


def saved_path(settings: Settings, name: str) -> Path:
    """Where run NAME is kept; a name is one folder-safe word, as a project's is."""
    try:
        validate_project_name(name)
    except InputError as exc:
        raise InputError(f"invalid run name {name!r}: use letters, digits, '_', '-' or '.'") from exc
    return runs_dir(settings) / f"{name}.json"


def save_run(settings: Settings, name: str, run: dict[str, Any]) -> Path:
    path = saved_path(settings, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps({"name": name, "run": run, "summary": summarize(run)}, ensure_ascii=False))
    return path


def saved_runs(settings: Settings) -> list[str]:
    """The names of the saved runs, newest first."""
    folder = runs_dir(settings)
    paths = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True) if folder.is_dir() else []
    return [p.stem for p in paths]


def load_run(settings: Settings, name: str) -> dict[str, Any]:
    """A saved run: {"name", "run", "summary"}."""
    path = saved_path(settings, name)
    if not path.is_file():
        known = ", ".join(sorted(saved_runs(settings))) or "none"
        raise CompareError(f"no saved run {name!r} (saved: {known}); save one with --save {name}")
    try:
        saved: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CompareError(f"saved run {path} cannot be read: {exc}") from exc
    return saved


def same_corpus(before: dict[str, Any], fingerprint: str, before_name: str) -> None:
    """Refuse a comparison over another corpus (checked before a run, so nothing runs in vain)."""
    if before["corpus_fingerprint"] != fingerprint:
        raise CompareError(
            f"refusing to compare: run {before_name!r} is over another corpus "
            f"(fingerprint {before['corpus_fingerprint']}, this suite's {fingerprint})"
        )


def compare(before: dict[str, Any], after: dict[str, Any], before_name: str = "before") -> dict[str, Any]:
    """Per stage, per check and case by case: the means before and after over the cases both ran, and the
    two-sided exact Wilcoxon signed-rank p-value of the paired per-case differences."""
    same_corpus(before, after["corpus_fingerprint"], before_name)
    old = {c["name"]: c for c in before["cases"]}
    new = {c["name"]: c for c in after["cases"]}
    names = [n for n in new if n in old]
    figures: dict[str, dict[str, Any]] = {
        "score": _paired([old[n].get("score", 0.0) for n in names], [new[n].get("score", 0.0) for n in names])
    }
    judged = [n for n in names if "retrieval" in old[n] and "retrieval" in new[n]]
    for stage in STAGES:
        for metric in STAGE_METRICS:
            figures[f"{stage}.{metric}"] = _paired(
                [old[n]["retrieval"][stage][metric] for n in judged],
                [new[n]["retrieval"][stage][metric] for n in judged],
            )
    for check in CHECK_NAMES:
        both = [n for n in names if check in _checks(old[n]) and check in _checks(new[n])]
        if both:
            figures[f"check.{check}"] = _paired(
                [float(_checks(old[n])[check]) for n in both], [float(_checks(new[n])[check]) for n in both]
            )
    cases = []
    for n in names:
        changed = _case_changes(old[n], new[n])
        if changed:
            cases.append({"name": n, **changed})
    return {
        "before": before_name,
        "before_config": before["config_digest"],
        "after_config": after["config_digest"],
        "before_options": before.get("options", {}),
        "after_options": after.get("options", {}),
        "paired_cases": len(names),
        "figures": figures,
        "cases": cases,
    }


def _checks(case: dict[str, Any]) -> dict[str, bool]:
    return {c["name"]: c["passed"] for c in case.get("checks", [])}


def _paired(before: list[float], after: list[float]) -> dict[str, Any]:
    if not before:
        return {"before": 0.0, "after": 0.0, "delta": 0.0, "p": 1.0, "pairs": 0, "better": 0, "worse": 0}
    diffs = [b - a for a, b in zip(before, after, strict=True)]
    p, _ = wilcoxon_signed_rank(diffs)
    mean_before, mean_after = statistics.fmean(before), statistics.fmean(after)
    return {
        "before": mean_before,
        "after": mean_after,
        "delta": mean_after - mean_before,
        "p": p,
        "pairs": len(diffs),
        "better": sum(d > 0 for d in diffs),
        "worse": sum(d < 0 for d in diffs),
    }


def _case_changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What changed for one case: checks that now fail or now pass, and each stage's nDCG@10 that moved."""
    old_checks, new_checks = _checks(old), _checks(new)
    now_failing = [k for k, v in new_checks.items() if not v and old_checks.get(k, True)]
    now_passing = [k for k, v in new_checks.items() if v and old_checks.get(k) is False]
    stages = {}
    if "retrieval" in old and "retrieval" in new:
        for stage in STAGES:
            a, b = old["retrieval"][stage]["ndcg@10"], new["retrieval"][stage]["ndcg@10"]
            if a != b:
                stages[stage] = {"before": a, "after": b}
    if not (now_failing or now_passing or stages):
        return {}
    return {
        "score": {"before": old.get("score", 0.0), "after": new.get("score", 0.0)},
        "now_failing": now_failing,
        "now_passing": now_passing,
        "ndcg@10": stages,
    }


def compare_text(result: dict[str, Any]) -> str:
    """The comparison as a person reads it: figures that moved with their p-values, then the cases."""
    same = result["before_config"] == result["after_config"]
    out = [
        f"compared with {result['before']!r} over {result['paired_cases']} paired cases "
        + ("(same configuration)" if same else f"(config {result['before_config']} -> {result['after_config']})"),
        f"options before: {options_text(result['before_options'])}; now: {options_text(result['after_options'])}",
        "two-sided exact Wilcoxon signed-rank test on the per-case differences",
        f"  {'figure':20} {'before':>8} {'after':>8} {'delta':>8} {'p':>8}  better/worse",
    ]
    unchanged = 0
    for key, row in result["figures"].items():
        if key != "score" and not (row["better"] or row["worse"]):
            unchanged += row["pairs"] > 0
            continue
        if row["pairs"]:
            out.append(
                f"  {key:20} {row['before']:8.3f} {row['after']:8.3f} {row['delta']:+8.3f} {row['p']:8.4f}  "
                f"{row['better']}/{row['worse']} of {row['pairs']}"
            )
    out.append(f"  ({unchanged} other figures: no case changed)")
    if result["cases"]:
        out.append("cases that changed:")
    for case in result["cases"]:
        parts = [f"score {case['score']['before']:.2f} -> {case['score']['after']:.2f}"]
        if case["now_failing"]:
            parts.append("now failing: " + ", ".join(case["now_failing"]))
        if case["now_passing"]:
            parts.append("now passing: " + ", ".join(case["now_passing"]))
        if case["ndcg@10"]:
            parts.append(
                "nDCG@10 " + ", ".join(f"{s} {v['before']:.2f}->{v['after']:.2f}" for s, v in case["ndcg@10"].items())
            )
        out.append(f"  {case['name']}: " + "; ".join(parts))
    return "\n".join(out)
