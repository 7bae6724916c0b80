"""The graph for `langgraph dev` / LangGraph Studio and the LangGraph server.

Compiled without a checkpointer (the server brings its own). An auto run stops at the `review`
interrupt after A4 (context `pause_after`: "a4" by default, "none" or "all"); answer it with
`Command(resume={"accept": true})` or the fields to change. Pass `context={"project": "<name>"}`.
"""

from ragstream.orchestration.graph import build_graph
from ragstream.telemetry.heap_snapshots import install_from_env

graph = build_graph()
install_from_env()  # only with RAGSTREAM_HEAP_SNAPSHOTS set: bench/load.py's per-round heap snapshots
