"""A thread after its run: `history` (and time travel), `send`, `trace`, and a project's conversation `memory`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstream.app.cli.common import Once, open_session, open_workspace, print_token, report, report_answer
from ragstream.errors import InputError

if TYPE_CHECKING:
    from ragstream.settings import Settings


def register(sub: Any) -> None:
    history = sub.add_parser("history", help="list a thread's checkpoints, or restart from one")
    history.add_argument("--thread", required=True)
    history.add_argument("--restart", metavar="CHECKPOINT_ID", help="make this checkpoint current (time travel)")
    history.set_defaults(handler=cmd_history)

    send = sub.add_parser("send", help="send a thread's built prompt to the configured LLM (streamed, with a critic)")
    send.add_argument("--thread", required=True)
    send.set_defaults(handler=cmd_send)

    trace = sub.add_parser("trace", help="show a thread's telemetry trace (stages, LLM calls, tokens, cost, errors)")
    trace.add_argument("--thread", required=True)
    trace.add_argument("--json", action="store_true", help="every event as JSON")
    trace.add_argument("--metadata", action="store_true", help="the thread's run-metadata record as JSON")
    trace.set_defaults(handler=cmd_trace)

    memory = sub.add_parser("memory", help="a project's conversation memory: show, clear, or record an answer")
    memory.add_argument("action", choices=["show", "clear", "record"])
    memory.add_argument("--project", action=Once, required=True)
    memory.add_argument("--thread", help="for record: the thread whose prompt was answered")
    memory.add_argument("--answer-file", help="for record: the answer text (default: stdin)")
    memory.add_argument(
        "--server", metavar="URL", help="a LangGraph server: the memory of RAGSTREAM_USER (token in RAGSTREAM_TOKEN)"
    )
    memory.set_defaults(handler=cmd_memory)


def cmd_history(args: argparse.Namespace, settings: Settings) -> int:
    session = open_session(settings, args.thread)
    if args.restart:
        report(session, session.restart_from(args.restart))
        return 0
    for row in session.history():
        print(
            f"{row['checkpoint_id']}  step {row['step']!s:>3}  stage {row['stage']:12s} next {row['next']}  "
            f"{row['created_at']}"
        )
    return 0


def cmd_send(args: argparse.Namespace, settings: Settings) -> int:
    answer = open_session(settings, args.thread).send(on_token=print_token).state.answer
    assert answer is not None  # a send that returns has its answer
    print()
    report_answer(answer)
    return 0


def cmd_trace(args: argparse.Namespace, settings: Settings) -> int:
    session = open_session(settings, args.thread)
    events = session.trace()
    if not events:
        raise InputError(f"no trace for thread {args.thread!r}")
    if args.json:
        print(json.dumps(events, indent=1, ensure_ascii=False))
        return 0
    metadata = session.current().state.run_metadata
    if args.metadata:
        print(metadata.model_dump_json(indent=2))
        return 0
    from ragstream.orchestration.metadata import summary_lines

    for line in summary_lines(metadata):
        print(line)
    summary = session.trace_summary()
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


def cmd_memory(args: argparse.Namespace, settings: Settings) -> int:
    """The local user's memory, or with --server the memory of the user whose token is in RAGSTREAM_TOKEN."""
    if args.action == "record":
        answer = Path(args.answer_file).read_text(encoding="utf-8") if args.answer_file else sys.stdin.read()
        open_session(settings, args.thread, args.project).record_answer(answer)
        print("answer recorded")
        return 0
    if args.server and not (os.environ.get("RAGSTREAM_USER") and os.environ.get("RAGSTREAM_TOKEN")):
        raise InputError("--server needs RAGSTREAM_USER and RAGSTREAM_TOKEN (from `ragstream users add`)")
    workspace = open_workspace(settings)
    workspace.project_summary(args.project)  # a name that is no project's is refused before the memory is touched
    memory = workspace.memory_of(os.environ.get("RAGSTREAM_USER"), args.server, os.environ.get("RAGSTREAM_TOKEN", ""))
    if args.action == "clear":
        memory.clear(args.project)
        print(f"conversation history of '{args.project}' cleared for user '{memory.user}'")
        return 0
    for turn in memory.context(args.project):
        print(f"[{turn.role}] {turn.content}")
    return 0
