"""Regex and schema bombs: a schema `pattern` that backtracks catastrophically is stopped by the regex timeout
under every pool (it hung `kit run --pool thread`: Python's `re` cannot be interrupted and holds the GIL); a
pattern whose nested counted repeats would take gigabytes to compile is refused at load; `kit lint` refuses
nested quantifiers in schema patterns as in regex checks."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit.checks.params import MAX_PATTERN_SIZE, pattern_size

KIT = [sys.executable, "-m", "kit.cli"]
BACKTRACKS = "^(a|aa)+$"  # exponential in `re` and in `regex` on "aaa…a!"
BOMB = "(((a{1000}){1000}){1000})"  # 10^9 once multiplied out: the `regex` module compiled it into gigabytes

AGENT = """\
import json
def agent(text, case):
    return {"case_id": case.id, "final_output": json.dumps({"s": "a" * 60 + "!"}), "finish_reason": "finish",
            "spans": []}
"""


def _run(cwd: Path, *args: str, timeout: float, memory_mb: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # a bomb that gets past the kit must not take the machine with it
        if memory_mb:
            resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(cwd), os.environ.get("PYTHONPATH")) if p)}
    env.pop("KIT_RUN_ID", None)
    return subprocess.run(
        [*KIT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, preexec_fn=limit
    )


@pytest.mark.parametrize("pool", ["thread", "serial", "process"])
def test_a_backtracking_schema_pattern_is_stopped_under_every_pool(tmp_path, pool):
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": BACKTRACKS}}}
    cases = "".join(
        f"- id: c{i}\n  input: hi\n  checks:\n    - {{type: schema, schema: {json.dumps(schema)}}}\n" for i in range(2)
    )
    (tmp_path / "cases.yaml").write_text(cases)
    (tmp_path / "bomb_agent.py").write_text(AGENT)
    start = time.monotonic()
    p = _run(
        tmp_path,
        "run", "--cases", "cases.yaml", "--agent", "bomb_agent:agent", "--pool", pool, "--no-store", "--json",
        timeout=90,
    )  # fmt: skip
    assert time.monotonic() - start < 60
    assert p.returncode == 1, p.stderr
    results = [r for run in json.loads(p.stdout)["results"] for r in run["checks"]]
    assert len(results) == 2
    assert all(r["outcome"] == "error" and "took over" in r["reason"] for r in results), results


@pytest.mark.parametrize(
    "check",
    [
        {"type": "regex", "pattern": BOMB},
        {"type": "schema", "schema": {"type": "string", "pattern": BOMB}},
        {"type": "schema", "schema": {"type": "object", "patternProperties": {BOMB: {}}}},
    ],
    ids=["regex", "schema-pattern", "patternProperties"],
)
def test_a_pattern_too_big_to_compile_is_refused_at_load(tmp_path, check):
    (tmp_path / "cases.yaml").write_text(f"- id: bomb\n  input: hi\n  checks:\n    - {json.dumps(check)}\n")
    start = time.monotonic()
    p = _run(tmp_path, "lint", "cases.yaml", timeout=60, memory_mb=1500)
    assert time.monotonic() - start < 30
    assert p.returncode == 2, p.stderr
    assert "cases.yaml" in p.stderr and "case 'bomb'" in p.stderr
    assert f"over {MAX_PATTERN_SIZE:,} steps" in p.stderr and "Traceback" not in p.stderr


def test_lint_refuses_nested_quantifiers_in_a_schema_pattern(tmp_path, capsys):
    from kit.cli import main as kit

    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(\\w+\\s?)*$"}}}
    (tmp_path / "cases.yaml").write_text(
        f"- id: nested\n  input: hi\n  checks:\n    - {{type: schema, schema: {json.dumps(schema)}}}\n"
    )
    assert kit(["lint", str(tmp_path / "cases.yaml")]) == 2
    err = capsys.readouterr().err
    assert "case 'nested'" in err and "nests quantifiers" in err and "(\\\\w+\\\\s?)*" in err


@pytest.mark.parametrize(
    ("pattern", "size"),
    [
        ("abc", 3),
        ("a+", 2),
        (r"\d{1,3}", 3),
        ("[A-Z]{2}\\d{6}", 8),
        ("(a{100}){100}", 10_000),
        ("((a{100}){100}){100}", 1_000_000),
        ("(?:x|y{10}){5}", 55),
        ("(?=a{10})b", 11),
    ],
)
def test_pattern_size_multiplies_nested_counted_repeats(pattern, size):
    assert pattern_size(pattern) == size


def test_pattern_size_bounds_syntax_only_the_regex_module_knows():
    # \p{L} is no `re` syntax: every counted repeat is taken as nested, an over-estimate.
    assert pattern_size(r"\p{L}{3}(x{100}){100}{100}") > MAX_PATTERN_SIZE
    assert pattern_size(r"\p{L}{2,3}") <= 100


def test_a_real_schema_pattern_still_matches_as_before():
    from kit.checks.params import compile_schema

    v = compile_schema({"type": "object", "patternProperties": {"^x-": {"type": "integer"}}})
    v.validate({"x-a": 1, "b": "s"})
    with pytest.raises(Exception, match="must be integer"):
        v.validate({"x-a": "no"})
