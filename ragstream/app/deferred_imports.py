"""Packages whose `__init__` runs on first use instead of on first import of one of their submodules.

LangGraph imports `langgraph_sdk.auth.types` (a module of type definitions), and with it the package
`langgraph_sdk`, whose `__init__` imports the HTTP clients (httpx and its CLI's rich and click,
websockets): about 0.4 s of CPU a local run never uses. LangSmith's tracer imports
`langsmith.types.run_select_field`, and with it `langsmith.types`, whose `__init__` imports some 150
generated API models: about 0.3 s more. Python runs a package's `__init__` before any of its
submodules, so a submodule cannot be imported without it; `defer_init` changes exactly that for
the named packages: importing one of their submodules sets up the package (its `__path__`) without
running its `__init__`, which runs, whole and once, when an attribute of the package itself is first
read (`langgraph_sdk.get_client`, `from langsmith.types import Run`). Packages already imported are
not touched. Nothing else changes: the same code runs, later or never.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from types import ModuleType
from typing import Any

# Imported only for submodules on a local run; each package's __init__ is pure imports (no side effects).
CLI_DEFERRED = ("langgraph_sdk", "langsmith.types")


class _DeferredInit(importlib.abc.Loader):
    def __init__(self, real: importlib.abc.Loader) -> None:
        self.real = real
        self.lock = threading.RLock()

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        loader = self

        def __getattr__(name: str) -> Any:  # only called for names the module does not have yet
            with loader.lock:
                if module.__dict__.get("__getattr__") is __getattr__:
                    del module.__dict__["__getattr__"]  # the real __init__ may define its own
                    module.__loader__ = loader.real
                    loader.real.exec_module(module)
            try:
                return module.__dict__[name]
            except KeyError:
                hook = module.__dict__.get("__getattr__")
                if hook is not None:
                    return hook(name)
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None

        module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> Any:
        if fullname not in self.names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return None
        spec.loader = _DeferredInit(spec.loader)
        return spec


def defer_init(*packages: str) -> None:
    """Defer the `__init__` of these packages (those not imported yet) until an attribute is read."""
    names = frozenset(p for p in packages if p not in sys.modules)
    if names and not any(isinstance(f, _Finder) and names <= f.names for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(names))
