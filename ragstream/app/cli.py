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


def cmd_preprocess(args: argparse.Namespace, settings: Settings) -> int:
    from ragstream.preprocessing import preprocess

    sp = preprocess(_read_prompt(args), settings, include_undecided=args.include_undecided or None)
    if args.json:
        print(sp.model_dump_json(indent=2))
    else:
        print(format_segment_table(sp))
        print("\n=== prompt_ready ===")
        print(sp.prompt_ready, end="")
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
