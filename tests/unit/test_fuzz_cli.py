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

# Characters that split lines in some readers but not in JSON or YAML, and control characters.
SEPARATORS = "\u2028\u2029\u0085\x1c\x1d\x1e\x0b\x0c\r\x1b\x00\u202e"
# Scalars that tripped the store or the loaders before: huge integers, NaN, lone surrogates, empty keys.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["\ud800", "two", "zero", "high", "1e12", "", "latest", "ORD-1", "oops"]),
    st.text(alphabet=st.sampled_from(SEPARATORS + "ab/."), max_size=8),
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


def _alias_bomb(levels: int, fanout: int) -> str:
    """`levels` anchors, each a list of `fanout` aliases of the one before: fanout**levels nodes."""
    lines = [f"l0: &l0 [{', '.join(['x'] * fanout)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fanout)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


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
    st.builds(lambda k, v: f"{k}: 1\n{k}: {v}\n".encode(), st.sampled_from(KEYS), st.integers()),  # duplicate keys
    st.integers(min_value=2, max_value=9).map(lambda n: _alias_bomb(n, 9).encode()),
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


# --- the new inputs: duplicate keys, aliases, separators, ids, settings ------------------------------------

yaml_keys = st.text(alphabet=st.characters(categories=("L", "N"), max_codepoint=0x2FF), min_size=1, max_size=6)
yaml_docs = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.text(max_size=10)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(yaml_keys, inner, max_size=4),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None)
@given(doc=st.dictionaries(yaml_keys, yaml_docs, min_size=1, max_size=5), data=st.data())
def test_a_repeated_key_anywhere_is_refused_naming_its_line(doc, data):
    from kit import yamlio

    lines = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).splitlines()
    top = [i for i, line in enumerate(lines) if line and not line.startswith((" ", "-"))]
    first = data.draw(st.sampled_from(top))
    key_text = lines[first].split(":")[0]
    # The same key again at the end of the top-level mapping.
    text = "\n".join([*lines, f"{key_text}: again"]) + "\n"
    with pytest.raises(yamlio.DuplicateKeyError) as e:
        yamlio.safe_load(text)
    assert f"line {len(lines) + 1}" in str(e.value) and f"first at line {first + 1}" in str(e.value)
    assert yamlio.safe_load("\n".join(lines) + "\n") == yaml.safe_load("\n".join(lines) + "\n")


@settings(max_examples=40, deadline=None)
@given(value=yaml_docs, uses=st.integers(min_value=1, max_value=5))
def test_shared_values_load_as_pyyaml_loads_them(value, uses):
    from kit import yamlio

    shared = [value] * uses  # the same object several times: PyYAML writes one anchor and aliases
    text = yaml.safe_dump({"shared": shared, "again": shared}, allow_unicode=True)
    assert yamlio.safe_load(text) == yaml.safe_load(text)


@settings(max_examples=20, deadline=None)
@given(levels=st.integers(min_value=2, max_value=12), fanout=st.integers(min_value=2, max_value=12))
def test_aliases_load_exactly_when_they_expand_within_the_limit(levels, fanout):
    from kit import yamlio

    text = _alias_bomb(levels, fanout)
    # Nodes once expanded: each level's list is one node plus its items; the mapping holds every level.
    per_level = [1 + fanout]
    for _ in range(1, levels):
        per_level.append(1 + fanout * per_level[-1])
    total = 1 + sum(1 + n for n in per_level)
    if total <= yamlio.MAX_NODES:
        assert len(yamlio.safe_load(text)) == levels
    else:
        with pytest.raises(yamlio.AliasBombError):
            yamlio.safe_load(text)


ids = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=st.sampled_from(SEPARATORS + "/.\\~ab:"), max_size=10),
    st.sampled_from(["..", "../x", "/abs", "a/../b", "a//b", "C:x", "a\\b", "ok/fine", "x" * 300]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case_id=ids)
def test_any_case_id_loads_only_when_it_names_a_file_inside_its_folder(work, case_id):
    from kit.case import load_suite
    from kit.names import file_in

    f = work / "ids.yaml"
    f.write_text(yaml.safe_dump([{"id": case_id, "input": "hi", "checks": [{"type": "finished"}]}]), "utf-8")
    suite = load_suite(f)
    if suite.cases:
        [case] = suite.cases
        assert case.id == case_id
        path = file_in(work / "tapes", case.id, ".json")
        assert path.resolve().is_relative_to((work / "tapes").resolve())
        assert not any(ch in case.id for ch in "\x1b\x00\u2028\u2029\u0085\u202e")
    else:
        [error] = suite.errors
        text = str(error)
        assert str(f) in text and "id" in text
        assert not any(ch in text for ch in "\x1b\x00\u2028\u2029\u202e")


setting_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.text(alphabet=st.sampled_from(SEPARATORS + " ./a"), max_size=6),
    st.booleans(),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from(["agent_timeout", "store", "cases", "gates", "rubrics", "concurrency", "run_id"]),
    value=setting_values,
)
def test_any_setting_value_is_taken_or_refused_naming_the_key(work, key, value):
    import math
    import tomllib

    from kit.errors import KitInputError
    from kit.settings import MAX_AGENT_TIMEOUT, load_settings

    folder = work / "settings"
    folder.mkdir(exist_ok=True)
    if isinstance(value, float) and not math.isfinite(value):
        literal = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    else:
        literal = json.dumps(value, ensure_ascii=True) if not isinstance(value, bool) else str(value).lower()
    body = f"[tool.kit]\n{key} = {literal}\n"
    try:
        tomllib.loads(body)
    except tomllib.TOMLDecodeError:
        return  # not TOML at all (a separator TOML refuses in a string): nothing to load
    (folder / "pyproject.toml").write_text(body, encoding="utf-8")
    try:
        s = load_settings(root=folder, env={})
    except KitInputError as e:
        assert f"[tool.kit] {key}" in str(e) and str(folder / "pyproject.toml") in str(e)
        assert not any(ch in str(e) for ch in "\x1b\x00")
        return
    got = getattr(s, key)
    if key == "agent_timeout":
        assert 0 < got <= MAX_AGENT_TIMEOUT
    elif key in ("store", "cases", "gates", "rubrics"):
        assert str(got).strip() and "\x00" not in str(got)
    elif key == "concurrency":
        assert 1 <= got <= 1024
    elif key == "run_id":
        from kit.names import name_problem

        assert got is None or name_problem(got) is None
