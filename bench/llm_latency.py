"""How long a user waits for a whole auto run when every LLM call takes 300 ms (a typical model round trip).

Starts a local OpenAI-protocol server on 127.0.0.1 that answers each call after `--delay` seconds
(with a valid structured answer), ingests a SciFact sample so retrieval yields its candidates (30 at the defaults), and
runs the full pipeline with the `openai` provider: Agent 00 (two unknown headers), A2, A3 (one
judgment per candidate), A4, A5. Printed per setting of `llm.max_concurrency`: the median wall time
of the run and the number of LLM calls. 1 is the sequential baseline; the last line is the shipped
default.

Run: python bench/llm_latency.py [--runs 3] [--delay 0.3] [--work data/bench-llm]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.retrieval_eval import DEFAULT_DATA, write_corpus  # noqa: E402
from ragstream.app.session import RunSession  # noqa: E402
from ragstream.app.workspace import Workspace  # noqa: E402
from ragstream.ingestion.manager import IngestionManager  # noqa: E402
from ragstream.orchestration.checkpoint import memory_checkpointer  # noqa: E402
from ragstream.services import Services  # noqa: E402
from ragstream.settings import load_settings  # noqa: E402
from tests.openai_server import FakeOpenAIServer, Reply, schema_responder  # noqa: E402

PROMPT = """# Task
Does vitamin D supplementation reduce the risk of bone fractures in older adults?

# Reader notes
For a journal club; cite the trials.

# Evidence wanted
Randomized trials first.

# Format
bullet list
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.3)
    parser.add_argument("--work", type=Path, default=Path("data/bench-llm"))
    parser.add_argument("--docs", type=int, default=400)
    args = parser.parse_args()

    base = load_settings(overrides={"data_dir": str(args.work), "llm.provider": "local"})
    write_corpus(DEFAULT_DATA, base.data_dir / "doc_raw" / "sample", args.docs)
    IngestionManager(base).ingest("sample")
    shipped = base.llm.max_concurrency
    with FakeOpenAIServer() as server:
        server.responder = schema_responder
        server.fault = lambda request: Reply(delay_s=args.delay, content=schema_responder(request))
        for concurrency in [c for c in (1, 4, 8, 16) if c != shipped] + [shipped]:
            settings = load_settings(
                overrides={
                    "data_dir": str(args.work),
                    "llm.provider": "openai",
                    "llm.base_url": server.url,
                    "llm.api_key": "sk-bench-local-0000",
                    "llm.max_concurrency": concurrency,
                    "preprocessing.use_agent00": True,
                }
            )
            services = Services(settings)
            walls, calls = [], []
            for _ in range(args.runs):
                (settings.cache_dir / "agent00_header_map.json").unlink(missing_ok=True)  # ask Agent 00 every time
                ctl = RunSession(Workspace(settings, services), checkpointer=memory_checkpointer())
                ctl.select_project("sample")
                before = len(server.requests)
                started = time.perf_counter()
                sp = ctl.run_full_pipeline(PROMPT, pause_after="none").state
                walls.append(time.perf_counter() - started)
                calls.append(len(server.requests) - before)
            label = "  (shipped default)" if concurrency == shipped else ""
            print(
                f"max_concurrency {concurrency:2d}: auto run median {statistics.median(walls):.2f} s "
                f"({min(calls)} LLM calls, {len(sp.base_context_chunks)} candidates){label}",
                flush=True,
            )


if __name__ == "__main__":
    main()
