"""Promptfoo extension hook (afterAll): every eval's results go to the kit's store, however Promptfoo was started.

`npx promptfoo eval` and `npx promptfoo redteam run` keep their results in Promptfoo's own database; this
hook also writes them as Promptfoo's output file (the format of `promptfoo eval -o FILE.json`) and loads
that file with `kit ingest promptfoo`, the one path from Promptfoo into the store. The file goes to
$KIT_PROMPTFOO_RESULTS when set (`make evals` reads it there), else to .promptfoo/out/<eval id>.json.
The run lands in the settings' store ($KIT_STORE, [tool.kit] store, else .kit/evals.duckdb).

A failed ingest raises, so Promptfoo reports the hook as failed instead of a green eval whose results are
missing from the store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS_VAR = "KIT_PROMPTFOO_RESULTS"


def output_file(context: dict[str, Any]) -> dict[str, Any]:
    """The afterAll context as Promptfoo's own `-o FILE.json` (results format version 3)."""
    return {
        "evalId": context.get("evalId"),
        "results": {
            "version": 3,
            "timestamp": datetime.now(UTC).isoformat(),
            "prompts": context.get("prompts") or [],
            "results": context.get("results") or [],
        },
        "config": context.get("config") or {},
        "metadata": {"writtenBy": "kit_promptfoo.store_hook"},
    }


def results_path(eval_id: str | None, chosen: str | None = None) -> Path:
    """Where the eval's results go: `chosen` (the launcher's KIT_PROMPTFOO_RESULTS), else Promptfoo's folder."""
    if chosen:
        return Path(chosen)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in (eval_id or "eval"))
    return Path(".promptfoo") / "out" / f"{safe}.json"


def afterAll(context: dict[str, Any], options: dict[str, Any] | None = None) -> None:
    data = output_file(context)
    path = results_path(data["evalId"], os.environ.get(RESULTS_VAR))
    path.parent.mkdir(parents=True, exist_ok=True)
    # ASCII: a lone surrogate in a test's text (JavaScript allows one) is a JSON escape, which UTF-8 could
    # not hold; `kit ingest` stores it escaped.
    path.write_text(json.dumps(data, ensure_ascii=True), encoding="utf-8")
    # `kit ingest`, not its module: the adapters use the kit's commands, never the store's internals.
    proc = subprocess.run(
        [sys.executable, "-m", "kit.cli", "ingest", "promptfoo", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    sys.stderr.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"kit ingest promptfoo {path} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    # Nothing to hand back: Promptfoo keeps its own results.
