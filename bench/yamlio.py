"""The kit's YAML loader (kit/yamlio.py: duplicate keys and alias bombs refused) beside PyYAML's bare C safe
loader, on the case files bench/cases.py writes (1,000 small case files), interleaved, median of the rounds;
and `load_suite` as it is beside `load_suite` with the bare loader and without the case-id check.

    .venv/bin/python bench/yamlio.py [--files 1000] [--rounds 9]

Target: both within 1.10x (case loading must not slow by more than 10%).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from bench.cases import write_suite  # noqa: E402
from kit import names, yamlio  # noqa: E402
from kit.case import load_suite  # noqa: E402
from kit.yamlio import safe_load_all  # noqa: E402


def bare(texts: list[str]) -> int:
    return sum(len(list(yaml.load_all(t, Loader=yaml.CSafeLoader))) for t in texts)


def kit(texts: list[str]) -> int:
    return sum(len(safe_load_all(t)) for t in texts)


def timed(fn, arg) -> float:
    gc.collect()
    c = time.process_time()
    fn(arg)
    return time.process_time() - c


def suite_as_is(folder: Path) -> None:
    assert not load_suite(folder).errors


def suite_as_before(folder: Path) -> None:
    """load_suite with PyYAML's bare loader and no case-id check (what it did before both)."""
    loader, problem = yamlio.safe_load_all, names.name_problem
    yamlio.safe_load_all = lambda text: list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    names.name_problem = lambda name: None
    try:
        assert not load_suite(folder).errors
    finally:
        yamlio.safe_load_all, names.name_problem = loader, problem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_suite(folder, args.files)
        texts = [p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.yaml"))]
        assert bare(texts) == kit(texts)
        suite_as_is(folder)
        rounds: dict[str, list[float]] = {"bare": [], "kit": [], "before": [], "now": []}
        for i in range(args.rounds):  # the order alternates, so neither side always runs on a warmer heap
            sides = [("bare", bare, texts), ("kit", kit, texts)]
            sides += [("before", suite_as_before, folder), ("now", suite_as_is, folder)]
            for name, fn, arg in sides if i % 2 else sides[::-1]:
                rounds[name].append(timed(fn, arg))
    m = {k: statistics.median(v) * 1000 for k, v in rounds.items()}
    print(
        f"{len(texts)} files, CPU: kit.yamlio {m['kit']:7.1f} ms   yaml.CSafeLoader {m['bare']:7.1f} ms   "
        f"ratio {m['kit'] / m['bare']:4.2f}  (target <= 1.10; median of {args.rounds} interleaved rounds)"
    )
    print(
        f"{len(texts)} files, CPU: load_suite {m['now']:7.1f} ms   before (bare loader, no id check) "
        f"{m['before']:7.1f} ms   ratio {m['now'] / m['before']:4.2f}  (target <= 1.10)"
    )


if __name__ == "__main__":
    main()
