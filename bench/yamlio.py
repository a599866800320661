"""The kit's YAML loader (kit/yamlio.py: duplicate keys and alias bombs refused) beside PyYAML's bare C safe
loader, on the case files bench/cases.py writes (1,000 small case files), interleaved, median of the rounds.

    .venv/bin/python bench/yamlio.py [--files 1000] [--rounds 9]

Target: the kit's loader within 1.10x the bare loader (case loading must not slow by more than 10%).
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
from kit.yamlio import safe_load_all  # noqa: E402


def bare(texts: list[str]) -> int:
    return sum(len(list(yaml.load_all(t, Loader=yaml.CSafeLoader))) for t in texts)


def kit(texts: list[str]) -> int:
    return sum(len(safe_load_all(t)) for t in texts)


def timed(fn, texts: list[str]) -> float:
    gc.collect()
    c = time.process_time()
    fn(texts)
    return time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        write_suite(Path(tmp), args.files)
        texts = [p.read_text(encoding="utf-8") for p in sorted(Path(tmp).rglob("*.yaml"))]
    assert bare(texts) == kit(texts)
    base, ours = [], []
    for _ in range(args.rounds):
        base.append(timed(bare, texts))
        ours.append(timed(kit, texts))
    b, k = statistics.median(base), statistics.median(ours)
    print(
        f"{len(texts)} files, CPU: kit.yamlio {k * 1000:7.1f} ms   yaml.CSafeLoader {b * 1000:7.1f} ms   "
        f"ratio {k / b:4.2f}  (target <= 1.10; median of {args.rounds} interleaved rounds)"
    )


if __name__ == "__main__":
    main()
