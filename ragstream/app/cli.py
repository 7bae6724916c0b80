"""The `ragstream` command. Each subcommand is a thin door onto the same modules the GUI uses."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from ragstream.errors import InputError, RagstreamError
from ragstream.settings import Settings, load_settings
from ragstream.state import SuperPrompt


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
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
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


def cmd_preprocess(args: argparse.Namespace, settings: Settings) -> int:
    from ragstream.preprocessing import preprocess
    from ragstream.services import Services

    services = Services(settings)
    sp = preprocess(
        _read_prompt(args),
        settings,
        mapper=services.header_mapper,
        include_undecided=args.include_undecided or None,
        chunker=services.chunker,
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
    from ragstream.agents.a2_prompt_shaper import run_a2
    from ragstream.services import Services
    from ragstream.state import Stage, check_stage_allowed

    sp = _read_sp(args.sp)
    check_stage_allowed(sp, Stage.A2)
    services = Services(settings)
    sp = run_a2(sp, services.factory, services.llm, version=args.version)
    if args.json:
        print(sp.model_dump_json(indent=2))
    else:
        labels = sp.extras["a2"]["labels"]
        print("\n".join(f"{k}: {v} ({sp.extras['a2']['decisions'][k]})" for k, v in labels.items()))
        print("\n=== prompt_ready ===")
        print(sp.prompt_ready, end="")
    return 0


def cmd_agents(args: argparse.Namespace, settings: Settings) -> int:
    import json

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
    from ragstream.ingestion.manifest import Manifest
    from ragstream.projects import list_projects, project_paths

    names = list_projects(settings)
    if not names:
        print(f"no projects under {settings.data_dir} (put files in {settings.data_dir / 'doc_raw' / '<project>'})")
    for name in names:
        manifest = Manifest.load(project_paths(settings, name).manifest_path)
        chunks = sum(len(f.chunk_ids) for f in manifest.files.values())
        state = f"{len(manifest.files)} files, {chunks} chunks" if manifest.generation else "not ingested"
        print(f"{name:24s} {state}")
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
        stats = IngestionManager(settings).ingest(args.project, Path(args.path) if args.path else None, progress)
    finally:
        for bar in bars.values():
            bar.close()
    print(stats.summary())
    for path, reason in sorted(stats.skipped.items()):
        print(f"  skipped {path}: {reason}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragstream", description=__doc__)
    parser.add_argument("--data-dir", help="data root (overrides RAGSTREAM_DATA_DIR and config)")
    sub = parser.add_subparsers(dest="command", required=True)

    pre = sub.add_parser("preprocess", help="run PreProcessing (Tasks 1-4) on a prompt")
    pre.add_argument("prompt", nargs="?", help="the prompt text")
    pre.add_argument("--file", help="read the prompt from this UTF-8 file")
    pre.add_argument("--json", action="store_true", help="print the SuperPrompt as JSON")
    pre.add_argument(
        "--include-undecided", action="store_true", help="keep unmapped sections for retrieval"
    )
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
    ingest.set_defaults(handler=cmd_ingest)

    agents = sub.add_parser("agents", help="list agent configs or show one, validated")
    agents.add_argument("action", choices=["list", "show"])
    agents.add_argument("name", nargs="?", help="agent name for `show`, e.g. A2")
    agents.add_argument("--version", default="v1")
    agents.set_defaults(handler=cmd_agents)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace, Settings], int] = args.handler
    try:
        overrides = {"data_dir": args.data_dir} if args.data_dir else None
        return handler(args, load_settings(overrides=overrides))
    except RagstreamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
