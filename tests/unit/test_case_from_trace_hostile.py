"""`kit case from-trace` on input nobody planned for: random bytes, and traces of random spans (any names,
contents, arguments and answers, personal data among them). Every one is written as a case that loads and
lints clean, or refused with exit 2 naming it; never a traceback, never a file half written."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.case import load_suite
from kit.cli import main as kit
from kit.commands.lint import lint
from kit.settings import load_settings

SUITE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "from_trace" / "suite"
ENV = ("KIT_PLAN", "KIT_CASES", "KIT_INVARIANTS", "KIT_STORE", "KIT_RECORDINGS", "KIT_RECORDINGS_MODE")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    (root / "pyproject.toml").write_text('[project]\nname = "desk"\n[tool.kit]\ncases = "golden/cases"\n')
    shutil.copytree(SUITE, root / "golden")
    return root


@pytest.fixture
def inside(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(repo)
    return repo


def _kit(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = kit(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def _files(repo: Path) -> set[Path]:
    return {p for p in (repo / "golden").rglob("*") if p.is_file()}


names = st.sampled_from(["lookup_order", "issue_refund", "send_email", "handoff_to_human", "weird tool", "x/../y", ""])
text = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["jane@example.com", "+1 415 555 2671", "4111 1111 1111 1111", "line\nbreak # not: yaml"]),
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.floats(allow_nan=False), text),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
spans = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"kind": st.just("message"), "role": st.sampled_from(["user", "assistant"]), "content": text}
        ),
        st.fixed_dictionaries(
            {"kind": st.just("llm")},
            optional={"tokens_in": st.integers(0, 10**6), "tokens_out": st.integers(0, 10**6)},
        ),
        st.fixed_dictionaries(
            {"kind": st.just("tool"), "name": names, "input": st.dictionaries(text, json_values, max_size=3)},
            optional={
                "output": json_values,
                "error": st.one_of(st.none(), text),
                "server": st.sampled_from(["shop", "s/../t"]),
            },
        ),
    ),
    max_size=8,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    trace=st.fixed_dictionaries(
        {"case_id": st.one_of(text, st.just("refund-desk")), "spans": spans},
        optional={
            "latency_ms": st.floats(0, 10**7),
            "end_state": st.dictionaries(
                text, st.lists(st.dictionaries(text, json_values, max_size=2), max_size=2), max_size=2
            ),
        },
    ),
    mask=st.booleans(),
)
def test_any_trace_is_a_case_that_loads_or_a_named_refusal(inside, trace, mask):
    before = _files(inside)
    f = inside / "prod.json"
    f.write_text(json.dumps(trace))
    code, out, err = _kit(["case", "from-trace", str(f), *(["--mask"] if mask else [])])
    assert code in (0, 2), (code, out, err)
    assert "Traceback" not in err, err
    new = _files(inside) - before
    if code == 2:
        assert err.startswith("kit case: "), err
        assert not new - {f}
        return
    case_file = next(p for p in new if p.suffix == ".yaml")
    suite = load_suite(case_file, inside / "golden" / "invariants.yaml")
    assert not suite.errors, suite.errors
    problems = [
        p for p in lint(case_file, settings=load_settings()).problems if "is not in" not in str(p)
    ]  # tools.json lacks weird names
    assert not problems, problems
    if mask:
        for p in new - {f}:
            assert "jane@example.com" not in p.read_text()
    for p in new - {f}:
        p.unlink()


@pytest.mark.parametrize(
    "data", [b"", b"\xff\xfe", b"[" * 100_000, b"{}", b"[]", b'{"case_id": 1, "spans": 2}', b"null"]
)
def test_random_bytes_are_refused_by_name(inside, data):
    f = inside / "prod.json"
    f.write_bytes(data)
    code, out, err = _kit(["case", "from-trace", str(f)])
    assert code == 2, (out, err)
    assert "Traceback" not in err and "prod.json" in err, err
