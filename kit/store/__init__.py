"""The DuckDB store every result lands in: runs, case results, check results, judge calls.

store = open_store(plan.store)             # the plan's store (a command's --store)
run_id = store.start_run("kit", agent="support-desk", model="gpt-4o", config_hash="...")
store.record(run_id, case_run, trace)      # any process, any number at once; never waits on a lock
store.finish_run(run_id)                   # merges the spools into the DuckDB file
with store.connect() as con: ...           # read (merges first)
"""

from kit.store.api import DEFAULT_PATH, Store, current_git_sha, new_run_id, open_store
from kit.store.lock import StoreError

__all__ = ["DEFAULT_PATH", "Store", "StoreError", "current_git_sha", "new_run_id", "open_store"]
