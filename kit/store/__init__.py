"""The DuckDB store every result lands in: runs, case results, check results, judge calls.

store = open_store(plan.store)             # the plan's store (a command's --store)
run_id = store.start_run("kit", agent="support-desk", model="gpt-4o", config_hash="...")
store.record(run_id, case_run, trace)      # any process, any number at once; never waits on a lock
store.finish_run(run_id)                   # merges the spools into the DuckDB file
with store.connect() as con: ...           # read (merges first)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit.lazy import loader

# Loaded on first use: a process that only needs the store's row shapes (kit.store.rows, say: a Promptfoo
# worker) would otherwise import DuckDB, about 0.07 CPU-s, a fifth of such a worker's start (bench/promptfoo_start.py).
_LAZY = {
    "DEFAULT_PATH": "kit.store.api",
    "Store": "kit.store.api",
    "current_git_sha": "kit.store.api",
    "new_run_id": "kit.store.api",
    "open_store": "kit.store.api",
    "StoreError": "kit.store.lock",
}

if TYPE_CHECKING:  # pragma: no cover
    from kit.store.api import DEFAULT_PATH, Store, current_git_sha, new_run_id, open_store
    from kit.store.lock import StoreError


__getattr__ = loader(__name__, _LAZY, globals())

__all__ = ["DEFAULT_PATH", "Store", "StoreError", "current_git_sha", "new_run_id", "open_store"]
