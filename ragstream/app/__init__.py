"""The doors onto the pipeline: the CLI, the GUI, the MCP server, over the RunSession (one thread)
and the Workspace (projects, documents, agents, models, users) they hold.

A command imports LangGraph, which imports parts of packages whose `__init__` a local run never
uses (see `deferred_imports`): deferred here, before any door imports LangGraph.
"""

from ragstream.app.deferred_imports import CLI_DEFERRED, defer_init

defer_init(*CLI_DEFERRED)
