"""Every `kit` command fed random bytes, random JSON and random YAML as its input file: exit 0, 1 or 2,
never a traceback, and the store still opens afterwards (ingests write to it, so a value that could
wedge it would show up here). Bounded: a few hundred examples, well under a minute."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.cli import main as kit
from kit.store import open_store

ROOT = Path(__file__).resolve().parents[2]
GOOD_CASE = "id: fuzz\ninput: where is ORD-1\nchecks: [{type: finished}]\ninvariants: []\n"

# Scalars that tripped the store or the loaders before: huge integers, NaN, lone surrogates, empty keys.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["\ud800", "two", "zero", "high", "1e12", "", "latest", "ORD-1", "oops"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
# Shapes close to what each command reads, so the fuzz gets past the first "not a ... file" check.
KEYS = [
    "id", "input", "checks", "runs", "context", "turns", "invariants", "type", "tool", "text", "n",
    "spans", "kind", "name", "final_output", "case_id", "attempt", "tokens_in", "end_state",
    "testCases", "testRunData", "metricsData", "metadata", "success", "score", "order",
    "results", "componentResults", "gradingResult", "response", "tokenUsage", "testCase", "vars", "evalId",
    "hard", "soft", "floors", "baseline", "messages", "role", "content", "tool_calls",
]  # fmt: skip
shaped = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=16,
)


def _dump_json(value: object) -> bytes:
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


def _dump_yaml(value: object) -> bytes:
    try:
        return yaml.safe_dump(value, allow_unicode=True).encode("utf-8", "surrogatepass")
    except yaml.YAMLError:
        return b"- [unterminated"


contents = st.one_of(
    st.binary(max_size=300),
    json_values.map(_dump_json),
    shaped.map(_dump_json),
    shaped.map(_dump_yaml),
    st.lists(shaped, max_size=3).map(lambda rows: b"\n".join(_dump_json(r) for r in rows)),
    st.sampled_from([b"\xff\xfe not utf-8", b"[" * 100_000, b'{"a":' * 50_000, b"---\n- &a [*a]\n"]),
)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project folder of its own: the store, the input file and whatever a command writes stay in it."""
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "good.yaml").write_text(GOOD_CASE)
    (folder / "trace.json").write_text(json.dumps({"case_id": "fuzz", "final_output": "ok", "spans": []}))
    saved = {k: os.environ.get(k) for k in ("KIT_STORE", "KIT_AGENT", "KIT_CASES")}
    cwd = Path.cwd()
    os.environ["KIT_STORE"] = str(folder / "store.duckdb")
    os.environ.pop("KIT_AGENT", None)
    os.environ.pop("KIT_CASES", None)
    os.chdir(folder)
    store = open_store(folder / "store.duckdb")
    run_id = store.start_run("kit", git_sha=None)  # a run for report, gate and compare to read
    store.finish_run(run_id)
    try:
        yield folder
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


COMMANDS = {
    "check-trace": ["check", "--cases", "good.yaml", "{f}"],
    "check-cases": ["check", "--cases", "{f}", "trace.json"],
    "lint": ["lint", "{f}"],
    "import": ["import", "{f}"],
    "import-otel": ["import", "--format", "otel", "{f}"],
    "run": ["run", "--cases", "{f}", "--runs", "1", "--pool", "serial", "--timeout", "5", "-q"],
    "gate-config": ["gate", "--config", "{f}"],
    "gate-store": ["gate", "--store", "{f}", "--config", os.devnull],
    "report-store": ["report", "--store", "{f}"],
    "compare-store": ["compare", "previous", "latest", "--store", "{f}"],
    "ingest-promptfoo": ["ingest", "promptfoo", "{f}", "--git-sha", "none"],
    "ingest-deepeval": ["ingest", "deepeval", "{f}", "--git-sha", "none"],
    "merge": ["run", "--merge", "{f}", "-q"],
}


WRITERS = ("run", "ingest-promptfoo", "ingest-deepeval", "merge")


def _kit(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = kit(argv)
        except SystemExit as e:  # argparse's own exit 2
            code = e.code if isinstance(e.code, int) else 2
    return code, err.getvalue()


def _store_opens(work: Path) -> None:
    with open_store(work / "store.duckdb").connect() as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] >= 1


@pytest.mark.parametrize("command", list(COMMANDS))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=contents, suffix=st.sampled_from([".json", ".yaml", ".jsonl", ""]))
def test_random_input_files_are_exit_0_1_or_2_never_a_traceback(work, command, data, suffix):
    f = work / f"input{suffix}"
    f.write_bytes(data)
    argv = [a.replace("{f}", str(f)) for a in COMMANDS[command]]
    code, err = _kit(argv)
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err, err
    if command in WRITERS:
        _store_opens(work)


@pytest.mark.parametrize("command", ["lint", "check-trace", "ingest-deepeval", "gate-store", "run"])
def test_the_installed_command_never_prints_a_traceback(work, command):
    f = work / "deep.json"
    f.write_bytes(b"[" * 100_000 + b"\xff")
    argv = [a.replace("{f}", str(f)) for a in COMMANDS[command]]
    out = subprocess.run(
        [sys.executable, "-m", "kit.cli", *argv], cwd=work, capture_output=True, text=True, timeout=120
    )
    assert out.returncode in (0, 1, 2), out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    _store_opens(work)
