"""Serving RAGstream to others: the `gui`, the `mcp` tools over stdio, and the `users` of a shared server."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstream.app.cli.common import open_workspace

if TYPE_CHECKING:
    from ragstream.settings import Settings


def register(sub: Any) -> None:
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

    mcp = sub.add_parser(
        "mcp", help="serve the tools (list projects, search, build a SuperPrompt) to an MCP host over stdio"
    )
    mcp.set_defaults(handler=cmd_mcp)


def cmd_users(args: argparse.Namespace, settings: Settings) -> int:
    """Users of a shared LangGraph server; the new user's token is the last line printed."""
    registry = open_workspace(settings).users()
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
    app = Path(__file__).parent.parent / "ui_streamlit.py"
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
    # Streamlit replaces this process, so a signal sent to `ragstream gui` (SIGTERM from a service manager, a
    # kill from a script) reaches the server itself and nothing is left serving the port.
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, command, env)


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve RAGstream's tools to an MCP host over stdin/stdout until the host closes the pipe."""
    from ragstream.app.mcp_server import serve

    serve(settings)
    return 0
