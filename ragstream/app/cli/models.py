"""What the pipeline runs with: the embedding `models` (ONNX export) and the `agents`' configs."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ragstream.errors import InputError
from ragstream.settings import Settings


def register(sub: Any) -> None:
    models = sub.add_parser("models", help="prepare the embedding model's ONNX export (otherwise done on first use)")
    models.add_argument("action", choices=["prepare"])
    models.add_argument("--variants", nargs="+", choices=["fp32", "int8"], default=["fp32"])
    models.set_defaults(handler=cmd_models)

    agents = sub.add_parser("agents", help="list agent configs or show one, validated")
    agents.add_argument("action", choices=["list", "show"])
    agents.add_argument("name", nargs="?", help="agent name for `show`, e.g. A2")
    agents.add_argument("--version", default="v1")
    agents.set_defaults(handler=cmd_agents)


def cmd_models(args: argparse.Namespace, settings: Settings) -> int:
    """Export the embedding model to ONNX now, instead of on the first run that embeds."""
    from ragstream.model_files import resolve_model_dir
    from ragstream.onnx_model import ensure_model

    model_dir = resolve_model_dir(settings.embedding)
    for variant in args.variants:
        path = ensure_model(model_dir, settings.models_dir, variant)
        print(f"{variant}: {path} ({path.stat().st_size / 1e6:.1f} MB)")
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
