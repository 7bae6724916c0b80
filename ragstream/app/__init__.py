"""The doors onto the pipeline: the CLI, the controller the GUI holds, the MCP server.

A command imports LangGraph, which imports parts of packages whose `__init__` a local run never
uses (see `deferred_imports`): deferred here, before any door imports LangGraph.
"""

from ragstream.app.deferred_imports import CLI_DEFERRED, defer_init

defer_init(*CLI_DEFERRED)
