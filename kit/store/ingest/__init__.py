"""Load other tools' result files into the store: Promptfoo's `eval -o out.json`, DeepEval's test-run JSON."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.errors import KitInputError


@dataclass
class Ingested:
    run_ids: list[str] = field(default_factory=list)
    cases: int = 0
    results: int = 0
    skipped_runs: list[str] = field(default_factory=list)  # already in the store


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KitInputError("no such file", file=str(path)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KitInputError(f"not readable JSON: {e}", file=str(path)) from None


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:12]


def existing_runs(store: Any, run_ids: list[str]) -> set[str]:
    if not store.path.exists() and not store.spool.exists():
        return set()
    with store.connect() as con:
        rows = con.execute("SELECT run_id FROM runs WHERE run_id IN (SELECT unnest(?))", [run_ids]).fetchall()
    return {r[0] for r in rows}
