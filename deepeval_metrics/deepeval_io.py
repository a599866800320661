"""What the kit changes in DeepEval's per-test disk writes, and why.

Under `deepeval test run`, every `assert_test` (1) rewrites DeepEval's result cache twice
(`.deepeval/.deepeval-cache.json` and its temp twin) and (2) re-reads and rewrites the whole test run so
far (`.temp_test_run_data.json`). Both files grow with every test, so a suite of n cases costs O(n^2).

- The cache is turned off for good. Its key is (input, actual_output, expected_output, context) only, so
  with `--use-cache` it would hand a trajectory check the verdict of a *different* trajectory that ended in
  the same words: wrong for trace-based metrics, not just slow. `assert_test` resets the switch before every
  test, so it is pinned on the manager's class rather than set once.
- The run file is the only way results of pytest-xdist workers reach the `deepeval test run` process, so
  it is kept under `-n`; in a single process the run stays in memory (DeepEval reads the file only to
  merge workers), which makes each test O(1).

KIT_DEEPEVAL_CACHE=1 leaves DeepEval's stock behaviour alone (the bench measures both).
"""

from __future__ import annotations

from typing import Any

from kit.offline import deepeval_stock_io


def _pinned(value: bool) -> property:
    return property(lambda self: value, lambda self, _ignored: None)


def stock_io_requested() -> bool:
    return deepeval_stock_io()


def pin_deepeval_io(*, distributed: bool) -> list[str]:
    """Apply the changes above (idempotent); returns what was changed, for the session header."""
    if stock_io_requested():
        return []
    from deepeval.test_run import global_test_run_manager
    from deepeval.test_run.cache import global_test_run_cache_manager

    changed = [_pin(global_test_run_cache_manager, "disable_write_cache", True, "result cache off")]
    if not distributed:
        changed.append(_pin(global_test_run_manager, "save_to_disk", False, "run kept in memory"))
    return [c for c in changed if c]


def _pin(obj: Any, attr: str, value: bool, label: str) -> str:
    cls = type(obj)
    if getattr(cls, "_kit_pinned", None) == attr:
        return label
    pinned = type(f"Kit{cls.__name__}", (cls,), {attr: _pinned(value), "_kit_pinned": attr})
    obj.__class__ = pinned  # a data descriptor on the class wins over the instance attribute DeepEval sets
    return label
