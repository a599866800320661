"""JUnit XML for CI: a testsuite per run, a testcase per case run, a testcase per soft verdict that is
not a pass. Failing hard checks are the failure text; a soft gate without a judge is a skipped testcase
(never a pass). Pure: it renders rows the store gave (`queries.case_runs`, `queries.unpassed_checks`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html import escape
from typing import Any


@dataclass(frozen=True)
class SuiteRows:
    run: Mapping[str, Any]  # run_id, source
    cases: list[Mapping[str, Any]]  # case_id, attempt, passed, outcome, error, latency_ms
    unpassed: list[Mapping[str, Any]]  # case_id, attempt, check, gate, outcome, reason (outcome <> pass)


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _attr(value: Any, limit: int | None = None) -> str:
    # Cut before escaping: a cut escaped text could end inside an entity and break the XML.
    return escape(str(value)[:limit], quote=True)


def render(suites: Iterable[SuiteRows]) -> str:
    parts = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
    for suite in suites:
        parts.extend(_suite(suite))
    parts.append("</testsuites>")
    # XML 1.0 cannot hold most control characters (ESC, NUL) even escaped: a case id, reason or error
    # holding one would make the whole file invalid. Each is written as its escape text instead.
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), "\n".join(parts) + "\n")


def _suite(suite: SuiteRows) -> list[str]:
    run, cases = suite.run, suite.cases
    by_case: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for k in suite.unpassed:
        by_case.setdefault((k["case_id"], k["attempt"]), []).append(k)
    soft = [k for k in suite.unpassed if k["gate"] == "soft"]
    failures = sum(not c["passed"] and c["outcome"] != "error" and not c["error"] for c in cases)
    errors = sum(c["outcome"] == "error" or bool(c["error"]) for c in cases)
    skipped = sum(k["outcome"] == "skipped" for k in soft)
    source = _attr(run["source"])
    suite_name = _attr(f"{run['source']}:{run['run_id']}")
    out = [
        f'  <testsuite name="{suite_name}" tests="{len(cases) + len(soft)}" '
        f'failures="{failures}" errors="{errors}" skipped="{skipped}">'
    ]
    for c in cases:
        secs = (c["latency_ms"] or 0) / 1000
        bad = [k for k in by_case.get((c["case_id"], c["attempt"]), []) if k["gate"] == "hard"]
        body = "\n".join(f"{k['outcome']}: {k['check']}: {k['reason']}" for k in bad)
        name = _attr(f"{c['case_id']}#{c['attempt']}")
        out.append(f'    <testcase classname="{source}" name="{name}" time="{secs:.3f}">')
        if c["error"] or c["outcome"] == "error":
            msg = _attr(c["error"] or body, 500)
            out.append(f'      <error message="{msg}">{escape(body or str(c["error"]))}</error>')
        elif not c["passed"]:
            first = _attr(f"{bad[0]['check']}: {bad[0]['reason']}" if bad else "failed", 500)
            out.append(f'      <failure message="{first}">{escape(body)}</failure>')
        out.append("    </testcase>")
    for k in soft:
        name = _attr(f"{k['case_id']}#{k['attempt']} [soft:{k['check']}]")
        out.append(f'    <testcase classname="{source}.soft" name="{name}">')
        tag = {"skipped": "skipped", "error": "error"}.get(k["outcome"], "failure")
        out.append(f'      <{tag} message="{_attr(k["reason"] or "", 500)}"/>')
        out.append("    </testcase>")
    out.append("  </testsuite>")
    return out
