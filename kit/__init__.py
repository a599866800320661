"""The kit's oracle: trace and case models, the check registry, evaluation and aggregation.

`import kit` stays light (no pydantic, DuckDB, DeepEval or Promptfoo at import time): the names below
are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit.lazy import loader

__version__ = "0.1.0"

_LAZY = {
    "Trace": "kit.trace",
    "Span": "kit.trace",
    "load_trace": "kit.trace",
    "load_traces": "kit.trace",
    "Case": "kit.case",
    "CheckSpec": "kit.case",
    "load_suite": "kit.case",
    "Result": "kit.result",
    "CaseRun": "kit.result",
    "evaluate": "kit.evaluate",
    "summarize": "kit.aggregate",
    "flips": "kit.aggregate",
    "KitInputError": "kit.errors",
}

if TYPE_CHECKING:  # pragma: no cover
    from kit.aggregate import flips, summarize
    from kit.case import Case, CheckSpec, load_suite
    from kit.errors import KitInputError
    from kit.evaluate import evaluate
    from kit.result import CaseRun, Result
    from kit.trace import Span, Trace, load_trace, load_traces


__getattr__ = loader(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    """The lazy names too, before their first use (what `dir(kit)` and completion show)."""
    return sorted({*globals(), *_LAZY})


__all__ = [  # the lazy names above (tests/unit/test_lazy_names.py keeps the two lists equal)
    "Case",
    "CaseRun",
    "CheckSpec",
    "KitInputError",
    "Result",
    "Span",
    "Trace",
    "evaluate",
    "flips",
    "load_suite",
    "load_trace",
    "load_traces",
    "summarize",
]
