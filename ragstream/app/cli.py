"""The `ragstream` command. Each subcommand is a thin door onto the same modules the GUI uses."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from ragstream.errors import InputError, RagstreamError
from ragstream.settings import Settings, load_settings
from ragstream.stages import NAMES, SKIPPABLE, Stage
from ragstream.state import Answer, SuperPrompt
from ragstream.strategies import Strategy, strategy_name


def _read_prompt(args: argparse.Namespace) -> str:
    if args.file:
        try:
            data = Path(args.file).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read prompt file {args.file}: {exc.strerror}") from exc
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"prompt file {args.file} is not UTF-8 text (byte {exc.start})") from exc
    if args.prompt is None:
        raise InputError("give the prompt as an argument or with --file")
    return args.prompt


def format_segment_table(sp: SuperPrompt) -> str:
    """The segment table as aligned text columns, with piece counts per row."""
    pre = sp.preprocessing
    if pre is None:
        return "(not preprocessed)"
    pieces: dict[str, int] = {}
    for piece in pre.pieces:
        pieces[piece.parent_text_id] = pieces.get(piece.parent_text_id, 0) + 1
    header = ("id", "canon_type", "original_header", "kept", "note", "span", "lines", "pieces")
    rows = [header]
    for seg in pre.segments:
        rows.append(
            (
                seg.id,
                seg.canon_type,
                "-" if seg.original_header is None else repr(seg.original_header)[1:-1][:30],
                "yes" if seg.kept_for_retrieval else "no",
                seg.source_note,
                f"{seg.span.start}-{seg.span.end}",
                f"{seg.line_start}-{seg.line_end}",
                str(pieces.get(seg.id, 0)),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    meta = f"format: {pre.format}   task: {pre.task_rule}"
    if pre.format_note:
        meta += f"\nnote: {pre.format_note}"
    return meta + "\n" + "\n".join(lines)


def _print_sp(sp: SuperPrompt, as_json: bool) -> None:
    if as_json:
        print(sp.model_dump_json(indent=2))
    else:
        print(format_segment_table(sp))
        print("\n=== prompt_ready ===")
        print(sp.prompt_ready, end="")


def _run_alone(
    settings: Settings, sp: SuperPrompt, stage_name: str, prompt: str | None = None, **options: object
) -> SuperPrompt:
    from ragstream.orchestration.apply import run_alone
    from ragstream.services import Services
    from ragstream.stage_io import RunOptions, StageEnv

    env = StageEnv(Services(settings), RunOptions(manual=True, **options), prompt)
    return run_alone(sp, Stage(stage_name), env)


def cmd_preprocess(args: argparse.Namespace, settings: Settings) -> int:
    sp = _run_alone(
        settings, SuperPrompt(), "preprocess", _read_prompt(args), include_undecided=args.include_undecided or None
    )
    _print_sp(sp, args.json)
    return 0


def _read_sp(source: str) -> SuperPrompt:
    from pydantic import ValidationError

    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read SuperPrompt JSON from {source}: {exc}") from exc
    try:
        return SuperPrompt.model_validate_json(text)
    except ValidationError as exc:
        raise InputError(f"{source} is not a SuperPrompt JSON: {exc.errors()[0]['msg']}") from None


def cmd_a2(args: argparse.Namespace, settings: Settings) -> int:
    sp = _run_alone(settings, _read_sp(args.sp), "a2")
    if args.json:
        print(sp.model_dump_json(indent=2))
    else:
        report = sp.extras.a2
        assert report is not None
        print("\n".join(f"{k}: {v} ({report.decisions[k]})" for k, v in report.labels.items()))
        print("\n=== prompt_ready ===")
        print(sp.prompt_ready, end="")
    return 0


def cmd_agents(args: argparse.Namespace, settings: Settings) -> int:
    from ragstream.agents.agent_factory import AgentFactory

    factory = AgentFactory(settings.agents_dir)
    if args.action == "list":
        for name, version in factory.list_agents():
            cfg = factory.load_config(name, version)
            print(f"{name:6s} {version:4s} {cfg.mode:9s} {cfg.model_name:14s} {cfg.description}")
        return 0
    if not args.name:
        raise InputError("agents show needs an agent name, e.g. `ragstream agents show A2`")
    cfg = factory.load_config(args.name, args.version)
    print(f"# {factory.config_path(args.name, args.version)} (valid)")
    print(json.dumps(cfg.model_dump(), indent=2, ensure_ascii=False))
    return 0


def cmd_projects(args: argparse.Namespace, settings: Settings) -> int:
    from ragstream.ingestion.manifest import Manifest, manifest_summary
    from ragstream.projects import list_projects, project_paths

    names = list_projects(settings)
    if not names:
        print(f"no projects under {settings.data_dir} (put files in {settings.data_dir / 'doc_raw' / '<project>'})")
    for name in names:
        manifest_path = project_paths(settings, name).manifest_path
        summary = manifest_summary(manifest_path)
        state = f"{summary.files} files, {summary.chunks} chunks" if summary.generation else "not ingested"
        secrets = Manifest.load(manifest_path).secret_lines() if summary.generation else []
        print(f"{name:24s} {state}" + (f", secrets: {len(secrets)}" if secrets else ""))
        for line in secrets:
            print(f"  secret  {line}")
    return 0


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    from ragstream.ingestion.manager import IngestionManager

    bars: dict[str, tqdm] = {}

    def progress(phase: str, done: int, total: int) -> None:
        if phase not in bars:
            unit = "file" if phase == "scan" else "chunk"
            bars[phase] = tqdm(total=total, unit=unit, desc=phase, disable=args.quiet, file=sys.stderr)
        bars[phase].update(done - bars[phase].n)

    try:
        stats = IngestionManager(settings).ingest(
            args.project,
            Path(args.path) if args.path else None,
            progress,
            ignore_files=False if args.no_ignore else None,
        )
    finally:
        for bar in bars.values():
            bar.close()
    print(stats.summary())
    for path, reason in sorted(stats.skipped.items()):
        print(f"  skipped {path}: {reason}")
    return 0


def _progress(event: dict) -> None:
    """Live per-stage progress on stderr, from the graph's event stream."""
    kind = event.get("event")
    if kind == "prompt_secrets":
        found = ", ".join(f"{f['type']} (line {f['line']})" for f in event["findings"])
        print(
            f"warning: your prompt holds secrets: {found}; each was replaced by [REDACTED: <type>] "
            "before anything was stored or sent",
            file=sys.stderr,
            flush=True,
        )
    elif kind == "stage_start":
        print(f"> {event['stage']} ...", file=sys.stderr, flush=True)
    elif kind == "stage_finish":
        counts = ", ".join(f"{k} {v}" for k, v in event["counts"].items())
        mode = event.get("retrieval")
        extra = f", {mode['strategy']}/{mode['rung']}" if mode else ""
        print(
            f"  done {event['stage']} in {event['duration_ms']:.0f} ms ({counts}, ~{event['prompt_tokens']} "
            f"tokens{extra})",
            file=sys.stderr,
            flush=True,
        )
        plan = event.get("plan")
        if plan:
            print(
                f"  plan: {plan['intent']} (confidence {plan['confidence']:.2f}), "
                f"{'retrieve' if plan['retrieve'] else 'no retrieval'}: {plan['reason']}",
                file=sys.stderr,
                flush=True,
            )
    elif kind == "stage_warning":
        print(f"  note {event['stage']}: {event['message']}", file=sys.stderr, flush=True)
    # a stage_error is not printed here: main() prints the failure once, on one line, after "> stage ..."


def _controller(settings: Settings, thread: str | None, project: str | None):
    from ragstream.app.controller import AppController

    ctl = AppController(settings, thread_id=thread)
    ctl.on_event = _progress
    project = project or ctl.sp.extras.project
    if project:
        ctl.select_project(project)
    return ctl


def _edit_condensed(current: str, args: argparse.Namespace) -> str | None:
    """The person's edit of S_CTX_MD: from --sctx-file, or $EDITOR on a temp file; None keeps it."""
    import os
    import subprocess
    import tempfile

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


def _report(ctl, sp: SuperPrompt) -> None:
    print(
        f"thread {ctl.thread_id}: stage {sp.stage.value}"
        + (f", paused before {ctl.paused_before}" if ctl.paused_before else ""),
        file=sys.stderr,
    )
    print(sp.prompt_ready, end="")


def _warm_up(settings: Settings, project: str | None) -> None:
    """Load the embedding model and the project's index in a thread while the graph's modules import.

    Both spend most of their time outside the interpreter lock (onnxruntime, file reads), so a
    command that will embed and search starts that much sooner. Errors are left for the run to report.
    """
    import threading

    def load() -> None:
        try:
            from ragstream.embedding import get_embedder
            from ragstream.ingestion.manifest import committed_generation
            from ragstream.ingestion.snapshot import load_snapshot
            from ragstream.projects import project_paths

            get_embedder(settings.embedding, settings.models_dir)
            if project:
                paths = project_paths(settings, project)
                load_snapshot(paths.index_dir, committed_generation(paths.manifest_path))
        except Exception:  # noqa: BLE001 - the run itself reports any problem, with its own message
            pass

    threading.Thread(target=load, name="ragstream-warm-up", daemon=True).start()


def _decide_headers(ctl, args: argparse.Namespace) -> bool:
    """Strict mode: answer the question about headers PreProcessing could not map, from `--decide HEADER=CHOICE`
    or, on a terminal, by asking; False when nothing waits."""
    waiting = ctl.waiting or {}
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
    ctl = _controller(settings, args.thread, args.project)
    ctl.history_profile = getattr(args, "history", None)
    send = getattr(args, "send", False)
    options = {
        "pause_after": "a4" if args.review else "none",
        "strategy": args.strategy,
        "skip": args.skip or [],
        "projects": getattr(args, "also", None) or [],
        "web_search": True if getattr(args, "web", False) else None,
        "send": send and not args.review,
        "strict": getattr(args, "strict", False),
    }
    as_json = getattr(args, "json", False)
    on_token = None if as_json else _print_token  # JSON output: the answer is in the object, not streamed
    sp = ctl.run_full_pipeline(_read_prompt(args), options, on_token=on_token)
    if _decide_headers(ctl, args):
        sp = ctl.resume()
    if args.review and ctl.paused_before:
        print(f"== paused after A4 (thread {ctl.thread_id}); condensed context:\n{sp.S_CTX_MD}\n", file=sys.stderr)
        edited = _edit_condensed(sp.S_CTX_MD, args)
        if edited is not None and edited != sp.S_CTX_MD:
            ctl.edit(S_CTX_MD=edited)
        sp = ctl.resume()
        if send:
            ctl.send(on_token=on_token)
            sp = ctl.sp
    if as_json:
        print(json.dumps(run_json(ctl, sp), indent=2, ensure_ascii=False))
        return 0
    if args.tokens and sp.stage is Stage.BUILD:
        from ragstream.orchestration.token_report import format_breakdown

        print(format_breakdown(ctl.token_breakdown(sp, ask_server=True)), file=sys.stderr)
    if sp.answer is not None:
        print()
        _report_answer(sp.answer)
        return 0
    if args.style == "markdown" and not args.output:
        _report(ctl, sp)
        return 0
    _export(ctl, sp, args.style, args.output)
    return 0


def _export(ctl, sp: SuperPrompt, style: str, output: str | None) -> None:
    """The built prompt in a style, to a file or stdout (a paused run has no built prompt: a clear error)."""
    from ragstream.orchestration.export import export_prompt

    text = export_prompt(sp, style)
    print(f"thread {ctl.thread_id}: stage {sp.stage.value}", file=sys.stderr)
    if output is None:
        print(text, end="")
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror}") from exc
    print(f"wrote the prompt ({style}) to {output}", file=sys.stderr)


def run_json(ctl, sp: SuperPrompt) -> dict:
    """What `run --json` prints: the thread, where it stands, the final prompt, the answer and the run's metadata."""
    return {
        "thread_id": ctl.thread_id,
        "stage": sp.stage.value,
        "paused_before": ctl.paused_before,
        "prompt_ready": sp.prompt_ready,
        "answer": sp.answer.text if sp.answer is not None else None,
        "run_metadata": sp.run_metadata.model_dump(mode="json"),
    }


def _print_token(token: str) -> None:
    print(token, end="", flush=True)


def _report_answer(answer: Answer) -> None:
    verdicts = [" ".join(f"{k}={v}" for k, v in a.critique.items() if k != "feedback") for a in answer.attempts]
    print(f"critic: {' | '.join(verdicts)}; regenerations: {answer.retries}", file=sys.stderr)


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    """The main job on the bundled sample: ingest it, then build a SuperPrompt for the sample prompt."""
    from ragstream.ingestion.manager import IngestionManager
    from ragstream.settings import resource_dir

    examples = resource_dir("examples")
    stats = IngestionManager(settings).ingest("sample", examples / "sample_project")
    print(stats.summary(), file=sys.stderr)
    args.file, args.prompt, args.project = str(examples / "prompt.md"), None, "sample"
    return cmd_run(args, settings)


def cmd_step(args: argparse.Namespace, settings: Settings) -> int:
    from ragstream.stages import stage_named

    ctl = _controller(settings, args.thread, args.project)
    stage = stage_named(args.stage)
    text = _read_prompt(args) if stage is Stage.PREPROCESS else None
    _report(ctl, ctl.run_stage(stage, text))
    return 0


def cmd_resume(args: argparse.Namespace, settings: Settings) -> int:
    ctl = _controller(settings, args.thread, None)
    _decide_headers(ctl, args)
    _report(ctl, ctl.resume())
    return 0


def cmd_history(args: argparse.Namespace, settings: Settings) -> int:
    ctl = _controller(settings, args.thread, None)
    if args.restart:
        _report(ctl, ctl.restart_from(args.restart))
        return 0
    for row in ctl.history():
        print(
            f"{row['checkpoint_id']}  step {row['step']!s:>3}  stage {row['stage']:12s} next {row['next']}  "
            f"{row['created_at']}"
        )
    return 0


def cmd_send(args: argparse.Namespace, settings: Settings) -> int:
    ctl = _controller(settings, args.thread, None)
    answer = ctl.send(on_token=_print_token)
    print()
    _report_answer(answer)
    return 0


def cmd_memory(args: argparse.Namespace, settings: Settings) -> int:
    """The local user's memory, or with --server the memory of the user whose token is in RAGSTREAM_TOKEN."""
    import os

    from ragstream.services import Services

    services = Services(settings)
    memory = services.memory
    if args.server:
        from ragstream.app.remote_store import RemoteStore

        token = os.environ.get("RAGSTREAM_TOKEN", "")
        user = os.environ.get("RAGSTREAM_USER", "")
        if not token or not user:
            raise InputError("--server needs RAGSTREAM_USER and RAGSTREAM_TOKEN (from `ragstream users add`)")
        memory = services.memory_of(user, RemoteStore(args.server, token))
    if args.action == "clear":
        memory.clear(args.project)
        print(f"conversation history of '{args.project}' cleared for user '{memory.user}'")
        return 0
    if args.action == "record":
        ctl = _controller(settings, args.thread, args.project)
        answer = Path(args.answer_file).read_text(encoding="utf-8") if args.answer_file else sys.stdin.read()
        ctl.record_answer(answer)
        print("answer recorded")
        return 0
    for turn in memory.context(args.project):
        print(f"[{turn.role}] {turn.content}")
    return 0


def cmd_users(args: argparse.Namespace, settings: Settings) -> int:
    """Users of a shared LangGraph server; the new user's token is the last line printed."""
    from ragstream.users import UserRegistry

    registry = UserRegistry.of(settings)
    if args.action == "add":
        token = registry.add(args.name, args.project or [])
        print(
            f"user '{args.name}' added, allowed on {sorted(set(args.project or []))}; their bearer token (shown once):"
        )
        print(token)
    elif args.action == "remove":
        registry.remove(args.name)
        print(f"user '{args.name}' removed")
    else:
        for user in registry.list():
            print(f"{user.name}\t{', '.join(user.projects) or '(no projects)'}")
    return 0


def cmd_gui(args: argparse.Namespace, settings: Settings) -> int:
    import os
    import subprocess

    app = Path(__file__).with_name("ui_streamlit.py")
    env = {**os.environ, "RAGSTREAM_DATA_DIR": str(settings.data_dir)}
    upload_mb = max(1, settings.ingestion.max_file_bytes // 1_000_000)
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.port",
        str(args.port),
        "--server.address",
        args.address,
        "--browser.gatherUsageStats",
        "false",
        "--server.maxUploadSize",
        str(upload_mb),
    ]
    if args.headless:
        command += ["--server.headless", "true"]
    return subprocess.call(command, env=env)


def cmd_trace(args: argparse.Namespace, settings: Settings) -> int:
    from ragstream.telemetry.trace import summarize

    ctl = _controller(settings, args.thread, None)
    events = ctl.trace()
    if not events:
        raise InputError(f"no trace for thread {args.thread!r}")
    if args.json:
        print(json.dumps(events, indent=1, ensure_ascii=False))
        return 0
    if args.metadata:
        print(ctl.sp.run_metadata.model_dump_json(indent=2))
        return 0
    from ragstream.orchestration.metadata import summary_lines

    for line in summary_lines(ctl.sp.run_metadata):
        print(line)
    summary = summarize(events)
    for stage, info in summary["stages"].items():
        print(
            f"{stage:12s} {info['duration_ms']:9.1f} ms  {info['counts']}  ~{info['prompt_tokens']} tokens"
            + (f"  {info['retrieval']}" if "retrieval" in info else "")
        )
    llm = summary["llm"]
    if llm["calls"]:
        print(
            f"LLM: {llm['calls']} calls, {llm['tokens_in']} tokens in, {llm['tokens_out']} out, ~${llm['cost_usd']:.6f}"
        )
    else:
        print(f"LLM: none (offline: {summary['offline_steps']} deterministic agent steps, no model, no cost)")
    tokens = [e for e in events if e.get("event") == "prompt_tokens"]
    if tokens:
        from ragstream.orchestration.token_report import format_breakdown

        print(format_breakdown(tokens[-1]))
    for error in summary["errors"]:
        print(f"error in {error['stage']}: {error['message']}")
    return 0


def cmd_models(args: argparse.Namespace, settings: Settings) -> int:
    """Export the embedding model to ONNX now, instead of on the first run that embeds."""
    from ragstream.model_files import resolve_model_dir
    from ragstream.onnx_model import ensure_model

    model_dir = resolve_model_dir(settings.embedding)
    for variant in args.variants:
        path = ensure_model(model_dir, settings.models_dir, variant)
        print(f"{variant}: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve RAGstream's tools to an MCP host over stdin/stdout until the host closes the pipe."""
    from ragstream.app.mcp_server import serve

    serve(settings)
    return 0


class _Once(argparse.Action):
    """An option that may be given once: argparse would otherwise keep the last of two silently."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{option_string} given twice: give it once")
        setattr(namespace, self.dest, values)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragstream", description=__doc__)
    parser.add_argument("--data-dir", help="data root (overrides RAGSTREAM_DATA_DIR and config)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v: info, -vv: debug)")
    parser.add_argument("-q", "--quiet", dest="log_errors_only", action="store_true", help="log errors only")
    sub = parser.add_subparsers(dest="command", required=True)

    pre = sub.add_parser("preprocess", help="run PreProcessing (Tasks 1-4) on a prompt")
    pre.add_argument("prompt", nargs="?", help="the prompt text")
    pre.add_argument("--file", help="read the prompt from this UTF-8 file")
    pre.add_argument("--json", action="store_true", help="print the SuperPrompt as JSON")
    pre.add_argument("--include-undecided", action="store_true", help="keep unmapped sections for retrieval")
    pre.set_defaults(handler=cmd_preprocess)

    a2 = sub.add_parser("a2", help="run A2 PromptShaper on a preprocessed SuperPrompt JSON")
    a2.add_argument("--sp", default="-", help="SuperPrompt JSON file from `preprocess --json` ('-' = stdin)")
    a2.add_argument("--version", default="v1", help="A2 config version")
    a2.add_argument("--json", action="store_true", help="print the SuperPrompt as JSON")
    a2.set_defaults(handler=cmd_a2)

    projects = sub.add_parser("projects", help="list projects and what is indexed")
    projects.set_defaults(handler=cmd_projects)

    ingest = sub.add_parser("ingest", help="index a project's documents (only changed files are re-embedded)")
    ingest.add_argument("project")
    ingest.add_argument("--path", help="ingest this folder (remembered for the project) instead of doc_raw/PROJECT")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.add_argument(
        "--no-ignore", action="store_true", help="ingest files that .gitignore, .ignore or .ragstreamignore exclude"
    )
    ingest.set_defaults(handler=cmd_ingest)

    run = sub.add_parser("run", help="run the whole pipeline on a prompt and print the final prompt")
    run.add_argument("prompt", nargs="?", help="the prompt text")
    run.add_argument("--file", action=_Once, help="read the prompt from this UTF-8 file")
    run.add_argument("--project", action=_Once, help="project whose documents ground the prompt")
    run.add_argument("--thread", action=_Once, help="checkpoint thread id (default: a new one, printed)")
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
    run.add_argument("--skip", nargs="*", choices=sorted(SKIPPABLE), help="stages to skip")
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

    step = sub.add_parser("step", help="run one stage on a thread (manual mode)")
    step.add_argument("stage", choices=list(NAMES))
    step.add_argument("prompt", nargs="?", help="the prompt text (for preprocess)")
    step.add_argument("--file", help="read the prompt from this UTF-8 file (for preprocess)")
    step.add_argument("--thread", required=True)
    step.add_argument("--project", action=_Once)
    step.set_defaults(handler=cmd_step)

    resume = sub.add_parser("resume", help="continue a paused run")
    resume.add_argument("--thread", required=True)
    resume.add_argument(
        "--decide",
        action="append",
        metavar="HEADER=CHOICE",
        help="decide a header strict mode waits on (a canonical name, keep or drop); repeatable",
    )
    resume.set_defaults(handler=cmd_resume)

    history = sub.add_parser("history", help="list a thread's checkpoints, or restart from one")
    history.add_argument("--thread", required=True)
    history.add_argument("--restart", metavar="CHECKPOINT_ID", help="make this checkpoint current (time travel)")
    history.set_defaults(handler=cmd_history)

    send = sub.add_parser("send", help="send a thread's built prompt to the configured LLM (streamed, with a critic)")
    send.add_argument("--thread", required=True)
    send.set_defaults(handler=cmd_send)

    memory = sub.add_parser("memory", help="a project's conversation memory: show, clear, or record an answer")
    memory.add_argument("action", choices=["show", "clear", "record"])
    memory.add_argument("--project", action=_Once, required=True)
    memory.add_argument("--thread", help="for record: the thread whose prompt was answered")
    memory.add_argument("--answer-file", help="for record: the answer text (default: stdin)")
    memory.add_argument(
        "--server", metavar="URL", help="a LangGraph server: the memory of RAGSTREAM_USER (token in RAGSTREAM_TOKEN)"
    )
    memory.set_defaults(handler=cmd_memory)

    users = sub.add_parser("users", help="users of a shared LangGraph server: add (prints the token), list, remove")
    users.add_argument("action", choices=["add", "list", "remove"])
    users.add_argument("name", nargs="?", help="the user, for add and remove")
    users.add_argument("--project", action="append", help="for add: a project the user may use (repeat for more)")
    users.set_defaults(handler=cmd_users)

    gui = sub.add_parser("gui", help="start the Streamlit GUI")
    gui.add_argument("--port", type=int, default=8501)
    gui.add_argument("--address", default="127.0.0.1")
    gui.add_argument("--headless", action="store_true", help="do not open a browser")
    gui.set_defaults(handler=cmd_gui)

    trace = sub.add_parser("trace", help="show a thread's telemetry trace (stages, LLM calls, tokens, cost, errors)")
    trace.add_argument("--thread", required=True)
    trace.add_argument("--json", action="store_true", help="every event as JSON")
    trace.add_argument("--metadata", action="store_true", help="the thread's run-metadata record as JSON")
    trace.set_defaults(handler=cmd_trace)

    models = sub.add_parser("models", help="prepare the embedding model's ONNX export (otherwise done on first use)")
    models.add_argument("action", choices=["prepare"])
    models.add_argument("--variants", nargs="+", choices=["fp32", "int8"], default=["fp32"])
    models.set_defaults(handler=cmd_models)

    mcp = sub.add_parser(
        "mcp", help="serve the tools (list projects, search, build a SuperPrompt) to an MCP host over stdio"
    )
    mcp.set_defaults(handler=cmd_mcp)

    agents = sub.add_parser("agents", help="list agent configs or show one, validated")
    agents.add_argument("action", choices=["list", "show"])
    agents.add_argument("name", nargs="?", help="agent name for `show`, e.g. A2")
    agents.add_argument("--version", default="v1")
    agents.set_defaults(handler=cmd_agents)
    return parser


def configure_logging(verbose: int, quiet: bool) -> None:
    """Warnings by default, so a library's log lines never interleave with the prompt on stdout."""
    level = logging.ERROR if quiet else {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(level)  # libraries that set their own logger's level (bm25s: DEBUG) still obey the CLI
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose, args.log_errors_only)
    handler: Callable[[argparse.Namespace, Settings], int] = args.handler
    try:
        overrides = {"data_dir": args.data_dir} if args.data_dir else None
        code = handler(args, load_settings(overrides=overrides))
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below, not at interpreter exit
        return code
    except RagstreamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `ragstream ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
