"""Whole runs: `run` and `demo` (with the review, strict mode's questions and the export), and `resume`."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstream.app.cli.common import (
    Once,
    StageChoices,
    open_session,
    print_token,
    read_prompt,
    report,
    report_answer,
    skippable_stages,
)
from ragstream.errors import InputError
from ragstream.strategies import Strategy, strategy_name

if TYPE_CHECKING:
    from ragstream.app.session import RunResult, RunSession
    from ragstream.settings import Settings
    from ragstream.stages.options import RunOptions
    from ragstream.state import SuperPrompt


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="run the whole pipeline on a prompt and print the final prompt")
    run.add_argument("prompt", nargs="?", help="the prompt text")
    run.add_argument("--file", action=Once, help="read the prompt from this UTF-8 file")
    run.add_argument("--project", action=Once, help="project whose documents ground the prompt")
    run.add_argument("--thread", action=Once, help="checkpoint thread id (default: a new one, printed)")
    run.add_argument("--review", action="store_true", help="pause after A4 to edit the condensed context")
    run.add_argument("--sctx-file", help="with --review: replace the condensed context with this file")
    run.add_argument("--strict", action="store_true", help="headers PreProcessing cannot map wait for your decision")
    run.add_argument(
        "--decide",
        action="append",
        metavar="HEADER=CHOICE",
        help="with --strict: decide an unknown header (a canonical name, keep or drop); repeatable",
    )
    run.add_argument(
        "--strategy",
        choices=list(Strategy.__members__),
        type=strategy_name,  # the seed's names (SEMANTIC, PRECISE) still read
        help="force a retrieval strategy: KEYWORD (BM25), DENSE (vectors), HYBRID, TEMPORAL, EXPLORATORY",
    )
    run.add_argument(
        "--skip", nargs="*", choices=StageChoices(skippable_stages), metavar="STAGE", help="stages to skip: %(choices)s"
    )
    run.add_argument("--history", choices=["none", "recent", "relevant"], help="'relevant': past turns join retrieval")
    run.add_argument(
        "--send", action="store_true", help="then send the prompt to the configured LLM (streamed, with a critic)"
    )
    run.add_argument(
        "--style",
        choices=["markdown", "xml", "json", "plain"],
        default="markdown",
        help="how the final prompt is written (same content and citations in each)",
    )
    run.add_argument("--output", help="write the final prompt to this file instead of stdout")
    run.add_argument(
        "--tokens",
        action="store_true",
        help="print the prompt's tokens per section and excerpt (stderr), naming the tokenizer and whether exact",
    )
    run.add_argument(
        "--json", action="store_true", help="print the thread, final prompt, answer and run metadata as JSON"
    )
    run.add_argument(
        "--also", nargs="+", metavar="PROJECT", help="also retrieve from these projects (fused with --project)"
    )
    run.add_argument("--web", action="store_true", help="also ask the web-search server configured in tools.web_search")
    run.set_defaults(handler=cmd_run)

    demo = sub.add_parser("demo", help="ingest the bundled sample project and build a SuperPrompt (offline)")
    demo.add_argument("--thread", help="checkpoint thread id (default: a new one, printed)")
    demo.add_argument("--review", action="store_true", help="pause after A4 to edit the condensed context")
    demo.add_argument("--sctx-file", help="with --review: replace the condensed context with this file")
    demo.set_defaults(handler=cmd_demo, strategy=None, skip=None, style="markdown", output=None, tokens=False)

    resume = sub.add_parser(
        "resume", help="finish a run: accept a pending review, or go on from the last stage run by hand"
    )
    resume.add_argument("--thread", required=True)
    resume.add_argument("--review", action="store_true", help="stop at the review after A4 if the run reaches it")
    resume.add_argument(
        "--decide",
        action="append",
        metavar="HEADER=CHOICE",
        help="decide a header strict mode waits on (a canonical name, keep or drop); repeatable",
    )
    resume.set_defaults(handler=cmd_resume)


def run_options(args: argparse.Namespace) -> RunOptions:
    """The run's options from `run`'s (or `demo`'s) arguments: the one model the graph's context is."""
    from ragstream.stages.options import RunOptions

    return RunOptions(
        project=args.project,
        pause_after="a4" if args.review else "none",
        strategy=args.strategy,
        skip=args.skip or [],
        history_profile=getattr(args, "history", None),
        projects=getattr(args, "also", None) or [],
        web_search=True if getattr(args, "web", False) else None,
        send=getattr(args, "send", False) and not args.review,
        strict=getattr(args, "strict", False),
    )


def _edit_condensed(current: str, args: argparse.Namespace) -> str | None:
    """The person's edit of s_ctx_md: from --sctx-file, or $EDITOR on a temp file; None keeps it."""
    if args.sctx_file:
        return Path(args.sctx_file).read_text(encoding="utf-8")
    editor = os.environ.get("EDITOR")
    if not editor or not sys.stdin.isatty():
        print("(no $EDITOR or no terminal: keeping the condensed context as it is)", file=sys.stderr)
        return None
    with tempfile.NamedTemporaryFile("w+", suffix=".md", delete=False, encoding="utf-8") as handle:
        handle.write(current)
    try:
        subprocess.run([*editor.split(), handle.name], check=True)
        return Path(handle.name).read_text(encoding="utf-8")
    finally:
        Path(handle.name).unlink(missing_ok=True)


def _warm_up(settings: Settings, project: str | None) -> None:
    """Load the embedding model and the project's index in a thread while the graph's modules import.

    Both spend most of their time outside the interpreter lock (onnxruntime, file reads), so a
    command that will embed and search starts that much sooner. Errors are left for the run to report.
    """

    def load() -> None:
        try:
            from ragstream.embedding.embedder import get_embedder
            from ragstream.index.catalog import catalog_of, committed_snapshot
            from ragstream.tenancy.projects import project_paths

            get_embedder(settings.embedding, settings.models_dir)
            if project:
                committed_snapshot(catalog_of(settings), project_paths(settings, project))
        except Exception:  # noqa: BLE001 - the run itself reports any problem, with its own message
            pass

    threading.Thread(target=load, name="ragstream-warm-up", daemon=True).start()


def _decide_headers(ctl: RunSession, result: RunResult, args: argparse.Namespace) -> bool:
    """Strict mode: answer the question about headers PreProcessing could not map, from `--decide HEADER=CHOICE`
    or, on a terminal, by asking; False when nothing waits."""
    waiting = result.waiting or {}
    if waiting.get("kind") != "headers":
        return False
    given: dict[str, str] = {}
    for item in getattr(args, "decide", None) or []:
        header, sep, choice = item.rpartition("=")
        if not sep or not header:
            raise InputError(f"--decide takes HEADER=CHOICE, not {item!r}")
        given[header.strip()] = choice.strip()
    for row in waiting["headers"]:
        if row["header"] in given:
            continue
        options = "|".join(row["choices"])
        if not sys.stdin.isatty():
            raise InputError(
                f"strict mode: the header {row['header']!r} waits for a decision (thread {ctl.thread_id}): "
                f"ragstream resume --thread {ctl.thread_id} --decide '{row['header']}=<{options}>'"
            )
        print(f"== header {row['header']!r}: {row['preview']}\n   ({row['reason']})", file=sys.stderr)
        given[row["header"]] = input(f"   decide [{options}]: ").strip()
    ctl.decide(given)
    return True


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    _warm_up(settings, args.project)
    return _run(open_session(settings, args.thread, args.project), args)


def _run(ctl: RunSession, args: argparse.Namespace) -> int:
    options = run_options(args)
    send = getattr(args, "send", False)
    as_json = getattr(args, "json", False)
    on_token = None if as_json else print_token  # JSON output: the answer is in the object, not streamed
    result = ctl.run_full_pipeline(read_prompt(args), options, on_token=on_token)
    if _decide_headers(ctl, result, args):
        result = ctl.resume()
    sp = result.state
    if args.review and result.paused_before:
        print(f"== paused after A4 (thread {ctl.thread_id}); condensed context:\n{sp.s_ctx_md}\n", file=sys.stderr)
        edited = _edit_condensed(sp.s_ctx_md, args)
        if edited is not None and edited != sp.s_ctx_md:
            ctl.edit(s_ctx_md=edited)
        result = ctl.resume()
        if send:
            result = ctl.send(on_token=on_token)
        sp = result.state
    if as_json:
        print(json.dumps(run_json(ctl, result), indent=2, ensure_ascii=False))
        return 0
    if args.tokens and sp.stage.node == "build":
        from ragstream.orchestration.token_report import format_breakdown

        print(format_breakdown(ctl.token_breakdown(sp, ask_server=True)), file=sys.stderr)
    if sp.answer is not None:
        print()
        report_answer(sp.answer)
        return 0
    if args.style == "markdown" and not args.output:
        report(ctl, result)
        return 0
    _export(ctl, sp, args.style, args.output)
    return 0


def _export(ctl: RunSession, sp: SuperPrompt, style: str, output: str | None) -> None:
    """The built prompt in a style, to a file or stdout (a paused run has no built prompt: a clear error)."""
    text = ctl.export_prompt(style, sp)
    print(f"thread {ctl.thread_id}: stage {sp.stage.value}", file=sys.stderr)
    if output is None:
        print(text, end="")
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror}") from exc
    print(f"wrote the prompt ({style}) to {output}", file=sys.stderr)


def run_json(ctl: RunSession, result: RunResult) -> dict[str, Any]:
    """What `run --json` prints: the thread, where it stands, the final prompt, the answer and the run's metadata."""
    sp = result.state
    return {
        "thread_id": ctl.thread_id,
        "stage": sp.stage.value,
        "paused_before": result.paused_before,
        "prompt_ready": sp.prompt_ready,
        "answer": sp.answer.text if sp.answer is not None else None,
        "run_metadata": sp.run_metadata.model_dump(mode="json"),
    }


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    """The main job on the bundled sample: ingest it, then build a SuperPrompt for the sample prompt."""
    from ragstream.settings import resource_dir

    examples = resource_dir("examples")
    ctl = open_session(settings, args.thread)
    stats = ctl.workspace.ingest_docs("sample", source=examples / "sample_project")
    print(stats.summary(), file=sys.stderr)
    _warm_up(settings, "sample")
    args.file, args.prompt, args.project = str(examples / "prompt.md"), None, "sample"
    return _run(ctl, args)


def cmd_resume(args: argparse.Namespace, settings: Settings) -> int:
    """Like `run`, straight to the final prompt unless `--review` asks to stop at the review after A4."""
    ctl = open_session(settings, args.thread)
    _decide_headers(ctl, ctl.current(), args)
    report(ctl, ctl.resume(pause_after="a4" if args.review else "none"))
    return 0
