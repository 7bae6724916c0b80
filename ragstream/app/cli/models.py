"""What the pipeline runs with: the embedding `models` (ONNX export) and the `agents`' configs."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ragstream.app.cli.common import open_workspace
from ragstream.errors import InputError

if TYPE_CHECKING:
    from ragstream.settings import Settings


def register(sub: Any) -> None:
    models = sub.add_parser("models", help="prepare the embedding model's ONNX export (otherwise done on first use)")
    models.add_argument("action", choices=["prepare"])
    models.add_argument(
        "--variants",
        nargs="+",
        choices=["fp32", "int8", "w8", "w8-int8"],
        help="ONNX variants to build (default: the configured embedding.backend's)",
    )
    models.set_defaults(handler=cmd_models)

    agents = sub.add_parser("agents", help="list agent configs or show one, validated")
    agents.add_argument("action", choices=["list", "show"])
    agents.add_argument("name", nargs="?", help="agent name for `show`, e.g. A2")
    agents.add_argument("--version", default="v1")
    agents.set_defaults(handler=cmd_agents)


def cmd_models(args: argparse.Namespace, settings: Settings) -> int:
    """Build the embedding model's ONNX graph now, instead of on the first run that embeds."""
    for variant, path in open_workspace(settings).prepare_models(args.variants):
        print(f"{variant}: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def cmd_agents(args: argparse.Namespace, settings: Settings) -> int:
    workspace = open_workspace(settings)
    if args.action == "list":
        for name, version, cfg in workspace.agent_configs():
            print(f"{name:6s} {version:4s} {cfg.mode:9s} {cfg.model_name:14s} {cfg.description}")
        return 0
    if not args.name:
        raise InputError("agents show needs an agent name, e.g. `ragstream agents show A2`")
    path, cfg = workspace.agent_config(args.name, args.version)
    print(f"# {path} (valid)")
    print(json.dumps(cfg.model_dump(), indent=2, ensure_ascii=False))
    return 0
