"""`import kit` loads nothing heavy, yet its public names are all there: in `dir(kit)` and `__all__` before
their first use, each resolving to the object of the module that defines it."""

from __future__ import annotations

import json
import subprocess
import sys

import kit


def test_the_lazy_names_show_before_use_and_resolve_to_their_modules() -> None:
    code = """
import json, sys
import kit
before = sorted(n for n in dir(kit) if not n.startswith("_"))
heavy = sorted(m for m in ("pydantic", "yaml", "duckdb", "kit.case", "kit.trace") if m in sys.modules)
found = {n: getattr(kit, n).__module__ for n in kit.__all__ if hasattr(getattr(kit, n), "__module__")}
print(json.dumps({"dir": before, "all": list(kit.__all__), "heavy": heavy, "found": found}))
"""
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert out["heavy"] == []  # dir() and __all__ cost no import
    assert set(out["all"]) <= set(out["dir"])
    assert sorted(out["all"]) == sorted(kit._LAZY)  # every lazy name is public, and nothing else is
    assert {"Trace", "Case", "evaluate", "load_suite", "summarize", "KitInputError"} <= set(out["all"])
    assert out["found"]["evaluate"] == "kit.evaluate" and out["found"]["Trace"] == "kit.trace"


def test_a_promptfoo_worker_imports_no_duckdb_until_it_opens_the_store() -> None:
    """Promptfoo starts a Python worker per call in flight; DuckDB was a third of each one's start."""
    code = """
import json, sys
import kit_promptfoo.agent_provider, kit.store.rows
before = "duckdb" in sys.modules
from kit.store import StoreError, open_store
import kit.store.api, kit.store.lock
print(json.dumps({"before": before, "after": "duckdb" in sys.modules,
                  "same": open_store is kit.store.api.open_store and StoreError is kit.store.lock.StoreError}))
"""
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert out == {"before": False, "after": True, "same": True}
