"""Loading golden cases: bad input is named precisely, one broken case never hides the others."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kit.case import load_suite


def write(folder: Path, name: str, text: str) -> Path:
    p = folder / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text))
    return p


INVARIANTS = """
refund_safety:
  description: at most one refund
  checks:
    - {type: called_at_most, tool: issue_refund, n: 1}
efficient: [{type: finished}, {type: no_repeat}]
"""


def test_invariants_expand_after_the_case_checks(tmp_path):
    write(tmp_path, "invariants.yaml", INVARIANTS)
    write(
        tmp_path,
        "cases/a.yaml",
        """
        id: a
        input: hi
        invariants: [refund_safety, efficient]
        checks: [{type: called, tool: lookup_order}]
    """,
    )
    suite = load_suite(tmp_path)
    assert suite.errors == []
    (case,) = suite.cases
    assert [c.label for c in case.checks] == [
        "called:lookup_order",
        "called_at_most:issue_refund",
        "finished",
        "no_repeat",
    ]
    assert [c.invariant for c in case.checks] == [None, "refund_safety", "efficient", "efficient"]


def test_one_broken_case_does_not_hide_the_others(tmp_path):
    write(
        tmp_path,
        "many.yaml",
        """
        - {id: good, input: hi, checks: [{type: finished}]}
        - {id: bad, input: hi, checks: [{type: finished}, {type: callled, tool: x}]}
        - {id: also-good, input: hi}
    """,
    )
    suite = load_suite(tmp_path)
    assert [c.id for c in suite.cases] == ["good", "also-good"]
    (err,) = suite.errors
    assert str(err).startswith(
        f"{tmp_path / 'many.yaml'}: case 'bad': check #2 (callled): unknown check type 'callled'"
    )


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ("{type: called}", "check #1 (called): missing parameter 'tool'"),
        ("{type: called, tool: x, times: 2}", "check #1 (called): unknown parameter 'times'"),
        ("{type: called, tool: x, min: lots}", "check #1 (called): parameter 'min'"),
        ("{type: regex, pattern: '(unclosed'}", "check #1 (regex): parameter 'pattern': invalid regex '(unclosed'"),
        ("{type: schema, schema: {type: strng}}", "check #1 (schema): parameter 'schema': invalid JSON Schema"),
        ("{type: schema, schema: {}, target: tools}", "check #1 (schema): target must be 'output' or 'tool:NAME'"),
        (
            "{type: end_state, query: 'SELEC x', empty: true}",
            "check #1 (end_state): parameter 'query': SQL does not parse",
        ),
        ("{type: end_state, query: 'DELETE FROM refunds', empty: true}", "query must be a SELECT, got DELETE"),
        ("{type: end_state, query: 'SELECT 1'}", "give exactly one of 'expected' (rows) or 'empty: true'"),
        ("{type: arg, tool: t, key: k}", "give exactly one of 'expected' or 'pattern'"),
        ("{type: arg, tool: t, key: k, pattern: x, tol: 1}", "'tol' goes with 'expected'"),
        ("{type: budget}", "give at least one limit"),
        ("{type: trajectory, tools: [a], mode: sideways}", "parameter 'mode'"),
        ("{type: no_pii, kinds: [email, dna]}", "parameter 'kinds.1'"),
        ("{type: tool_schemas, schemas: nowhere.json}", "cannot read nowhere.json"),
        ("{tool: x}", "check #1: missing 'type'"),
        ("just-a-string", "check #1: a check must be a mapping"),
    ],
)
def test_bad_check_parameters_are_refused_at_load(tmp_path, check, message):
    write(tmp_path, "c.yaml", f"id: c1\ninput: hi\nchecks: [{check}]\n")
    suite = load_suite(tmp_path)
    assert suite.cases == []
    (err,) = suite.errors
    assert str(err).startswith(f"{tmp_path / 'c.yaml'}: case 'c1': ")
    assert message in str(err)


def test_malformed_yaml_names_file_and_line(tmp_path):
    write(tmp_path, "broken.yaml", "id: x\ninput: [unclosed\n")
    write(tmp_path, "fine.yaml", "id: fine\ninput: hi\n")
    suite = load_suite(tmp_path)
    assert [c.id for c in suite.cases] == ["fine"]
    assert str(suite.errors[0]).startswith(f"{tmp_path / 'broken.yaml'}: malformed YAML at line")


def test_missing_fields_unknown_invariant_and_duplicate_ids(tmp_path):
    write(tmp_path, "invariants.yaml", INVARIANTS)
    write(
        tmp_path,
        "a.yaml",
        """
        - {id: no-input}
        - {id: c, input: hi, invariants: [refund_safty]}
        - {id: d, input: hi}
        - {id: d, input: again}
    """,
    )
    messages = [str(e) for e in load_suite(tmp_path).errors]
    assert messages[0].endswith("case 'no-input': a case needs exactly one of 'input', 'turns' or 'user' (got none)")
    assert "case 'c': unknown invariant 'refund_safty' (known: efficient, refund_safety)" in messages[1]
    assert "case 'd': duplicate case id" in messages[2]


def test_yaml_is_read_with_a_safe_loader(tmp_path):
    write(tmp_path, "evil.yaml", "id: !!python/object/apply:os.system ['echo pwned > /tmp/kit-pwned']\ninput: hi\n")
    suite = load_suite(tmp_path)
    assert suite.cases == [] and "malformed YAML" in str(suite.errors[0])
    assert not Path("/tmp/kit-pwned").exists()


def test_non_case_files_and_folders_are_skipped(tmp_path):
    write(tmp_path, "invariants.yaml", INVARIANTS)
    write(tmp_path, "rubrics.yaml", "tone: {criteria: polite}\n")
    write(tmp_path, "fixtures/customers.yaml", "- {name: x}\n")
    write(tmp_path, "cases.yml", "cases:\n  - {id: a, input: hi}\n  - {id: b, input: [{role: user, content: hi}]}\n")
    suite = load_suite(tmp_path)
    assert suite.errors == [] and [c.id for c in suite.cases] == ["a", "b"]


def test_declared_extra_case_fields_are_kept(tmp_path):
    write(
        tmp_path,
        "c.yaml",
        "id: a\ninput: hi\ncontext: {customer_id: C1}\nmetadata: {owner: team-x}\ncassette: a.json\nruns: 3\n",
    )
    (case,) = load_suite(tmp_path).cases
    assert case.context == {"customer_id": "C1"} and case.runs == 3
    assert case.extra == {"metadata": {"owner": "team-x"}, "cassette": "a.json"}


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("id: c1\ninput: hi\ninvarients: [x]\n", "case 'c1': unknown key 'invarients' (did you mean 'invariants'?)"),
        ("id: c1\ninput: hi\nchecsk: []\n", "case 'c1': unknown key 'checsk' (did you mean 'checks'?)"),
        ("id: c1\ninput: hi\nowner: me\n", "case 'c1': unknown key 'owner' (known: cassette, checks, context,"),
        ("id: c1\ninput: hi\nchecks: [{type: not_caled, tool: x}]\n", "unknown check type 'not_caled' (did you mean"),
        ("id: c1\ninput: hi\nchecks: [{type: [a]}]\n", "check #1 (['a']): unknown check type ['a']"),
        (
            "id: c1\ninput: hi\nchecks: [{type: called, tol: x}]\n",
            "check #1 (called): unknown parameter 'tol' (did you",
        ),
        (
            "id: c1\ninput: hi\nchecks: [{type: regex, patern: x}]\n",
            "unknown parameter 'patern' (did you mean 'pattern'?)",
        ),
    ],
)
def test_unknown_keys_types_and_parameters_suggest_the_known_one(tmp_path, case, message):
    write(tmp_path, "c.yaml", case)
    suite = load_suite(tmp_path)
    assert suite.cases == []
    (err,) = suite.errors
    assert str(err).startswith(f"{tmp_path / 'c.yaml'}: case 'c1': ")
    assert message in str(err)


def test_an_unknown_key_in_an_invariant_check_is_named(tmp_path):
    write(tmp_path, "invariants.yaml", "safe: [{type: not_called, tool: issue_refund, tools: x}]\n")
    write(tmp_path, "c.yaml", "id: a\ninput: hi\n")
    err = load_suite(tmp_path).errors[0]
    assert "invariants.yaml: check #1 of invariant 'safe' (not_called): unknown parameter 'tools'" in str(err)
    assert "did you mean 'tool'?" in str(err)


def test_a_broken_invariants_file_is_reported(tmp_path):
    write(tmp_path, "invariants.yaml", "bad: [{type: called}]\n")
    write(tmp_path, "c.yaml", "id: a\ninput: hi\n")
    suite = load_suite(tmp_path)
    assert "invariants.yaml: check #1 of invariant 'bad' (called): missing parameter 'tool'" in str(suite.errors[0])


def test_an_invariant_without_an_invariants_file_says_where_it_looked(tmp_path):
    write(tmp_path, "c.yaml", "id: a\ninput: hi\ninvariants: [refund_safety]\n")
    (err,) = load_suite(tmp_path).errors
    assert "unknown invariant 'refund_safety': no invariants.yaml beside or above the case file" in str(err)


def test_case_files_are_found_in_path_order_outside_skipped_folders(tmp_path):
    from kit.case import case_files

    for name in ["a-c.yaml", "a/b.yaml", "a/z/y.yml", "b.yaml", "a/fixtures/f.yaml", "a/notes.txt", "invariants.yaml"]:
        write(tmp_path, name, "id: x\ninput: hi\n")
    (tmp_path / "dir.yaml").mkdir()
    expected = sorted(
        p
        for p in tmp_path.rglob("*")
        if p.suffix in (".yaml", ".yml") and p.is_file() and "fixtures" not in p.parts and p.name != "invariants.yaml"
    )
    assert case_files(tmp_path) == expected
    assert [p.relative_to(tmp_path).as_posix() for p in expected] == ["a/b.yaml", "a/z/y.yml", "a-c.yaml", "b.yaml"]
