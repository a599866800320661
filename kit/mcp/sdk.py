"""The `mcp` SDK's modules without its two package front doors. Importing any `mcp.*` module runs
`mcp/__init__.py` first, and it imports the SDK's client, whose import of `mcp.server` (`mcp/server/__init__.py`)
brings MCPServer (FastMCP) with its resources and templates: about a third of a `kit mcp replay` process's CPU,
for a server that uses none of them (the low-level `Server`, the stdio transport and the wire types are all it
needs).

`lean()` puts the two packages in sys.modules without running their `__init__`, so each submodule the kit
imports (`mcp.server.lowlevel`, `mcp.server.stdio`, `mcp.client.client`, ...) loads with its own imports only.
The first lookup of a name such a package would have bound (`from mcp import Client`,
`mcp.server.MCPServer`) runs its real `__init__` then, in place: the same module objects, classes and protocol,
only loaded when first asked for.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

PACKAGES = ("mcp", "mcp.server")  # parents first: finding `mcp.server` needs `mcp` in sys.modules
_lock = threading.RLock()


def lean() -> bool:
    """Before the process's first `mcp` import: the packages without their `__init__` (False: already imported,
    or not found, and left as they are)."""
    with _lock:
        if any(name in sys.modules for name in PACKAGES):
            return False
        made: list[str] = []
        for name in PACKAGES:
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None or spec.submodule_search_locations is None:
                for done in made:  # an SDK laid out otherwise: imported the ordinary way
                    del sys.modules[done]
                return False
            module = importlib.util.module_from_spec(spec)
            module.__dict__["__getattr__"] = _completer(module, spec)
            sys.modules[name] = module
            made.append(name)
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, module)  # what an import binds on the parent
        return True


def _completer(module: ModuleType, spec: ModuleSpec) -> Callable[[str], Any]:
    """A package's `__getattr__` (only asked for names it lacks): runs its `__init__` the first time."""
    ran = False

    def __getattr__(name: str) -> Any:
        nonlocal ran
        with _lock:
            if not ran:
                ran = True  # a lookup while it runs finds what is bound so far, as in a package mid-import
                assert spec.loader is not None
                spec.loader.exec_module(module)
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None

    return __getattr__
