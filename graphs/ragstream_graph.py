"""The graph for `langgraph dev` / LangGraph Studio and the LangGraph server.

Compiled without a checkpointer (the server brings its own) and, like every auto run, pausing after
A4 so a person can review the condensed context. Pass `context={"project": "<name>"}` with a run.
"""

from ragstream.orchestration.graph import build_graph

graph = build_graph(interrupt_after=["a4"])
