"""Single stages: `preprocess` and `a2` on a SuperPrompt outside any thread, `step` on a thread."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstream.app.cli.common import Once, StageChoices, open_session, open_workspace, read_prompt, report
from ragstream.errors import InputError

if TYPE_CHECKING:
    from ragstream.settings import Settings
    from ragstream.state import SuperPrompt


def register(sub: Any) -> None:
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

    step = sub.add_parser("step", help="run one stage on a thread (manual mode)")
    step.add_argument("stage", choices=StageChoices(stage_names), metavar="STAGE", help="the stage: %(choices)s")
    step.add_argument("prompt", nargs="?", help="the prompt text (for preprocess)")
    step.add_argument("--file", help="read the prompt from this UTF-8 file (for preprocess)")
    step.add_argument("--thread", required=True)
    step.add_argument("--project", action=Once)
    step.set_defaults(handler=cmd_step)


def stage_names() -> tuple[str, ...]:
    """The stages `step` may run, by their short names."""
    from ragstream.state.stage import NAMES

    return NAMES


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


def cmd_preprocess(args: argparse.Namespace, settings: Settings) -> int:
    from ragstream.state import Stage

    undecided = args.include_undecided or None
    sp = open_workspace(settings).run_alone(Stage.PREPROCESS, prompt=read_prompt(args), include_undecided=undecided)
    if args.json:
        print(sp.model_dump_json(indent=2))
    else:
        print(format_segment_table(sp))
        print("\n=== prompt_ready ===")
        print(sp.prompt_ready, end="")
    return 0


def _read_sp(source: str) -> SuperPrompt:
    from pydantic import ValidationError

    from ragstream.state import SuperPrompt

    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read SuperPrompt JSON from {source}: {exc}") from exc
    try:
        return SuperPrompt.model_validate_json(text)
    except ValidationError as exc:
        raise InputError(f"{source} is not a SuperPrompt JSON: {exc.errors()[0]['msg']}") from None


def cmd_a2(args: argparse.Namespace, settings: Settings) -> int:
    from ragstream.state import Stage

    sp = open_workspace(settings).run_alone(Stage.A2, _read_sp(args.sp))
    if args.json:
        print(sp.model_dump_json(indent=2))
    else:
        report = sp.extras.a2
        assert report is not None
        print("\n".join(f"{k}: {v} ({report.decisions[k]})" for k, v in report.labels.items()))
        print("\n=== prompt_ready ===")
        print(sp.prompt_ready, end="")
    return 0


def cmd_step(args: argparse.Namespace, settings: Settings) -> int:
    from ragstream.stages.rules import stage_named
    from ragstream.state import Stage

    session = open_session(settings, args.thread, args.project)
    stage = stage_named(args.stage)
    text = read_prompt(args) if stage is Stage.PREPROCESS else None
    report(session, session.run_stage(stage, text))
    return 0
