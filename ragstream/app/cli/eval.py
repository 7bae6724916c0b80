"""`eval`: a labelled suite through the real graph, judged stage by stage (ragstream.evaluation)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstream.app.cli.common import Once, StageChoices, skippable_stages
from ragstream.errors import InputError
from ragstream.strategies import Strategy, strategy_name

if TYPE_CHECKING:
    from ragstream.settings import Settings


def register(sub: Any) -> None:
    ev = sub.add_parser(
        "eval",
        help="measure on a labelled suite: retrieval per stage, the final prompt's checks, tokens, latency",
        description=(
            "SUITE is a folder with corpus/ and cases/NAME.md + NAME.json, a BEIR folder (corpus.jsonl, "
            "queries.jsonl, qrels/*.tsv), or a JSONL file of {question, relevant: [{path, lines?}], ...} "
            "whose corpus is the folder beside it named like it (NAME/ for NAME.jsonl), else corpus/ (or --corpus)."
        ),
    )
    ev.add_argument("suite", help="the suite: a case folder, a BEIR folder or a .jsonl file")
    ev.add_argument("--project", action=Once, help="project the corpus is ingested into (default: eval-<suite>)")
    ev.add_argument("--corpus", action=Once, help="a JSONL suite's corpus folder (default: NAME/ or corpus/ beside it)")
    ev.add_argument(
        "--strategy",
        choices=list(Strategy.__members__),
        type=strategy_name,
        help="force a retrieval strategy for every case (default: chosen per prompt)",
    )
    ev.add_argument(
        "--skip",
        nargs="*",
        choices=StageChoices(skippable_stages),
        metavar="STAGE",
        help="stages every case skips: %(choices)s",
    )
    ev.add_argument("--limit", type=int, default=0, help="run only the first N cases (0: all)")
    ev.add_argument("--json", action="store_true", help="print the run (per case) and its summary as JSON")
    ev.add_argument("--html", action=Once, metavar="FILE", help="also write the report as one self-contained HTML page")
    ev.add_argument("--save", action=Once, metavar="NAME", help="keep this run under the data root (eval/NAME.json)")
    ev.add_argument(
        "--compare",
        action=Once,
        metavar="NAME",
        help="compare with saved run NAME: per stage and case by case, with a paired test (same corpus only)",
    )
    ev.add_argument(
        "--min",
        action="append",
        metavar="KEY=VALUE",
        help="exit 1 when a figure is below VALUE: pass_rate, score, check.NAME, STAGE.METRIC (fused.ndcg@10)",
    )
    ev.set_defaults(handler=cmd_eval)


def thresholds(items: list[str] | None) -> dict[str, float]:
    """`--min` as {key: value}, every key one the summary can have (checked before anything runs)."""
    from ragstream.evaluation.checks import CHECK_NAMES
    from ragstream.evaluation.metrics import STAGE_METRICS
    from ragstream.evaluation.runner import STAGES

    known = {"pass_rate", "score"} | {f"check.{n}" for n in CHECK_NAMES}
    known |= {f"{s}.{m}" for s in STAGES for m in STAGE_METRICS}
    found: dict[str, float] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or number != number:
            raise InputError(f"--min takes KEY=NUMBER, not {item!r}")
        if key not in known:
            raise InputError(f"--min: unknown figure {key!r} (pass_rate, score, check.NAME, STAGE.METRIC)")
        found[key] = number
    return found


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from ragstream.app.session import RunSession
    from ragstream.app.workspace import Workspace
    from ragstream.evaluation.html import render_html
    from ragstream.evaluation.report import metric_values, summarize, terminal
    from ragstream.evaluation.runner import check_own_project, corpus_fingerprint, default_project, run_suite
    from ragstream.evaluation.store import compare, compare_text, load_run, same_corpus, save_run, saved_path
    from ragstream.evaluation.suite import load_suite
    from ragstream.orchestration.checkpoint import memory_checkpointer
    from ragstream.stages.options import RunOptions
    from ragstream.tenancy.projects import validate_project_name

    if args.limit < 0:
        raise InputError("--limit takes a number of cases, 0 for all")
    minimum = thresholds(args.min)
    before = load_run(settings, args.compare)["run"] if args.compare else None
    if args.save:
        saved_path(settings, args.save)  # a bad name is refused before the run, not after it
    suite = load_suite(Path(args.suite), Path(args.corpus) if args.corpus else None)
    if before is not None:
        same_corpus(before, corpus_fingerprint(suite), args.compare)
    project = validate_project_name(args.project or default_project(suite))
    check_own_project(settings, project, suite)
    options = RunOptions(strategy=args.strategy, skip=args.skip or [])
    session = RunSession(Workspace(settings), checkpointer=memory_checkpointer())
    run = run_suite(suite, session, project, options, args.limit, _progress())
    result = run.as_dict()
    summary = summarize(result)
    compared = compare(before, result, args.compare) if before is not None else None
    if args.json:
        print(json.dumps({"run": result, "summary": summary, "compare": compared}, indent=2, ensure_ascii=False))
    else:
        print(terminal(result, summary))
        if compared is not None:
            print("\n" + compare_text(compared))
    if args.html:
        _write(Path(args.html), render_html(result, summary))
        print(f"wrote the HTML report to {args.html}", file=sys.stderr)
    if args.save:
        print(f"saved the run as {args.save!r}: {save_run(settings, args.save, result)}", file=sys.stderr)
    values = metric_values(summary)
    below = []
    for key, floor in minimum.items():
        if key not in values:
            below.append(f"{key} not measured in this run")
        elif values[key] < floor:
            below.append(f"{key} {values[key]:.3f} < {floor}")
    for line in below:
        print(f"below threshold: {line}", file=sys.stderr)
    if summary["errors"]:
        print(f"error: {summary['errors']} cases could not run (their errors are in the report)", file=sys.stderr)
    return 1 if below or summary["errors"] else 0


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from exc


def _progress() -> Any:
    """A progress bar over the cases on a terminal; nothing when stderr is a pipe or a file."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar: dict[str, tqdm] = {}

    def show(number: int, total: int, name: str) -> None:
        if "bar" not in bar:
            bar["bar"] = tqdm(total=total, unit="case", desc="eval", file=sys.stderr)
        bar["bar"].set_postfix_str(name)
        bar["bar"].update(1)
        if number == total:
            bar["bar"].close()

    return show
