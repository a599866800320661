"""`kit check --json` writes each run as it is judged; the bytes are those of one `orjson.dumps` of the whole
object, and what orjson refuses anywhere makes json write the whole object, as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from kit.aggregate import summarize
from kit.case import load_suite
from kit.evaluate import evaluate
from kit.trace import load_traces

CASES = """
id: c
input: hi
checks:
  - {type: exact, expected: done}
  - {type: called, tool: lookup_order}
  - {type: no_tool_errors}
"""


def kit_check(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "kit.cli", "check", *args], capture_output=True, cwd=cwd, timeout=120)


def whole_object(cases: Path, traces: list[Path]) -> dict:
    case = load_suite(cases).cases[0]
    runs = [evaluate(t, case) for p in traces for t in load_traces(p)]
    return {"results": [r.to_dict() for r in runs], "summary": summarize(runs)}


def trace(i: int, output: str) -> dict:
    spans = [{"kind": "tool", "name": "lookup_order", "input": {"n": i}}] * (i % 2)
    return {"case_id": "c", "attempt": i, "final_output": output, "spans": spans}


@pytest.mark.parametrize("n", [0, 1, 5])
def test_the_json_output_is_one_orjson_dump_of_the_whole_object(tmp_path, n):
    (tmp_path / "c.yaml").write_text(CASES)
    files = []
    for i in range(n):
        files.append(tmp_path / f"t{i}.json")
        files[-1].write_text(json.dumps(trace(i, "done" if i % 3 else "not done")))
    if not files:  # no trace judged: a file with an unknown case
        files.append(tmp_path / "other.json")
        files[-1].write_text(json.dumps({"case_id": "other"}))
    p = kit_check(*map(str, files), "--cases", "c.yaml", "--json", cwd=tmp_path)
    assert p.returncode == (2 if n == 0 else 1), p.stderr
    assert p.stdout == orjson.dumps(whole_object(tmp_path / "c.yaml", files if n else [])) + b"\n"


def test_what_orjson_refuses_in_one_run_makes_json_write_the_whole_object(tmp_path):
    (tmp_path / "c.yaml").write_text(CASES)
    files = [tmp_path / "a.json", tmp_path / "b.json"]
    files[0].write_text(json.dumps(trace(1, "fine")))
    hostile = trace(2, "done")
    hostile["spans"] = [{"kind": "tool", "name": "lone \ud800 surrogate", "error": "boom"}]  # in a reason
    files[1].write_text(json.dumps(hostile))
    p = kit_check(*map(str, files), "--cases", "c.yaml", "--json", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    expected = whole_object(tmp_path / "c.yaml", files)
    assert "\ud800" in expected["results"][1]["checks"][2]["reason"]
    assert p.stdout == (json.dumps(expected) + "\n").encode()


GARBAGE = """
import gc, sys
from kit.cli import main

files = sys.argv[2:]
args = ["check", "--cases", sys.argv[1], "--json"]


def garbage_after(n):
    gc.collect()
    gc.disable()
    try:
        main([*args, *files[:n]])
        return gc.collect()
    finally:
        gc.enable()


garbage_after(1)  # the first run builds what later runs reuse
few, many = garbage_after(2), garbage_after(200)
assert many <= few + 5, (few, many)
assert gc.isenabled()
main([*args, files[0]])
assert gc.isenabled()
gc.disable()
main([*args, files[0]])
assert not gc.isenabled()
"""


def test_judging_leaves_no_garbage_for_the_cyclic_collector_and_restores_it(tmp_path):
    """kit check turns the cyclic collector off while it judges (reference counting frees every trace): the
    garbage it leaves in cycles does not grow with the traces, and the collector is back as it was. In a
    process of its own: a collection in a test worker's heap, grown by every test before, takes seconds."""
    (tmp_path / "c.yaml").write_text(CASES)
    files = []
    for i in range(200):
        files.append(tmp_path / f"t{i}.json")
        files[-1].write_text(json.dumps(trace(i, "done")))
    argv = [sys.executable, "-c", GARBAGE, str(tmp_path / "c.yaml"), *map(str, files)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
