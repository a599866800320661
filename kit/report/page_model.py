"""The page's data: every case run of the chosen runs with its checks, judge calls and (truncated, shared)
trace, as one compact JSON payload the page's script renders. Nothing here is HTML: the script puts every
value into the page as text, never as markup."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.report import page_data as pd
from kit.report.data import soft_gate_calibrations

MAX_STRING = 2_000  # characters of one value (a message, a tool result) before it is cut
MAX_TRACE = 30_000  # characters of one trace's spans (as JSON) before the later ones are dropped
MAX_TABLE_ROWS = 50  # rows of one end-state table
FAILING = ("fail", "error")
_LONG_STRING = re.compile(rf'"(?:[^"\\]|\\.){{{MAX_STRING},}}"')  # a JSON string of MAX_STRING characters or more


@dataclass(frozen=True)
class Truncation:
    strings: int = 0
    spans: int = 0
    rows: int = 0


class _Strings:
    """Interned strings (check names and reasons repeat across thousands of results)."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def __call__(self, s: Any) -> int:
        if s is None:
            return -1
        s = str(s)
        if len(s) > MAX_STRING:
            s = s[:MAX_STRING] + f"… [cut: {len(s) - MAX_STRING} more characters]"
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.items)
            self.items.append(s)
        return i


def _cut(value: Any, counter: list[int]) -> Any:
    if isinstance(value, str) and len(value) > MAX_STRING:
        counter[0] += 1
        return value[:MAX_STRING] + f"… [cut: {len(value) - MAX_STRING} more characters]"
    if isinstance(value, dict):
        return {str(k): _cut(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v, counter) for v in value]
    return value


def shrink_trace(raw: Any) -> dict[str, Any] | None:
    """A trace as the page shows it: long values cut, later spans and long tables dropped, each with a note."""
    if raw is None:
        return None
    try:
        trace = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except (ValueError, TypeError):
        return {"notes": ["the stored trace is not valid JSON"], "spans": [], "raw": str(raw)[:MAX_STRING]}
    if not isinstance(trace, dict):
        return {"notes": ["the stored trace is not a JSON object"], "spans": []}
    for key in ("run_id", "attempt", "case_id"):  # the row says these; dropping them lets attempts share a trace
        trace.pop(key, None)
    counter = [0]
    text = raw if isinstance(raw, str) else None
    if text is None or _LONG_STRING.search(text):  # most traces hold no long value: no walk
        trace = _cut(trace, counter)
    notes = []
    state = trace.get("end_state")
    if isinstance(state, dict):
        for name, rows in list(state.items()):
            if isinstance(rows, list) and len(rows) > MAX_TABLE_ROWS:
                state[name] = rows[:MAX_TABLE_ROWS]
                notes.append(f"end-state table {name}: first {MAX_TABLE_ROWS} of {len(rows)} rows shown")
    spans = trace.get("spans") if isinstance(trace.get("spans"), list) else []
    spans = [_prune(span) if isinstance(span, dict) else span for span in spans]
    kept, size = spans, 0
    if text is None or len(text) > MAX_TRACE:  # the spans' budget; the end state has its own (rows)
        kept = []
        for span in spans:
            size += len(json.dumps(span, default=str))
            if size > MAX_TRACE:
                break
            kept.append(span)
    if len(kept) < len(spans):
        notes.append(f"trace truncated: first {len(kept)} of {len(spans)} spans shown")
    trace["spans"] = kept
    if counter[0]:
        notes.append(f"{counter[0]} long value(s) cut at {MAX_STRING} characters")
    trace["notes"] = notes
    return trace


_DEFAULTS = (None, {}, [], 0, 0.0, False)
_ALWAYS = {"kind", "turn", "input", "output", "error"}  # a tool call's arguments, result and error, even empty


def _prune(span: dict[str, Any]) -> dict[str, Any]:
    """A span without the fields its writer left at their defaults (`role: null`, `tokens_in: 0`, ...):
    a third of a trace stored by some front ends, and nothing a reader looks at."""
    keep = _ALWAYS if span.get("kind") == "tool" else {"kind", "turn"}
    return {k: v for k, v in span.items() if k in keep or not any(v == d and type(v) is type(d) for d in _DEFAULTS)}


def pool(items: list[Any], index: dict[str, int], value: Any) -> int:
    """The index of `value` in `items`, appending it the first time it is seen."""
    digest = hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
    i = index.get(digest)
    if i is None:
        i = index[digest] = len(items)
        items.append(value)
    return i


class _Pool(list):  # type: ignore[type-arg]
    """End-state tables, each stored once: most runs leave most tables as they found them."""

    def __init__(self) -> None:
        super().__init__()
        self.index: dict[str, int] = {}

    def add(self, value: Any) -> int:
        return pool(self, self.index, value)


def _pop_latencies(trace: dict[str, Any]) -> list[Any] | None:
    """The run's and each span's latency, taken out of the trace: they differ between attempts that did the
    same thing, and without them those attempts share one stored trace (the attempt keeps its timings)."""
    spans = trace.get("spans", [])
    timing = [
        trace.pop("latency_ms", None),
        *(s.pop("latency_ms", None) if isinstance(s, dict) else None for s in spans),
    ]
    return timing if any(v is not None for v in timing) else None


def _pool_end_state(trace: dict[str, Any], tables: _Pool) -> None:
    state = trace.get("end_state")
    if isinstance(state, dict):
        trace["end_state"] = {name: tables.add(rows) for name, rows in state.items()}


def _num(v: Any, digits: int = 6) -> float | None:
    return None if v is None else round(float(v), digits)


@dataclass(frozen=True)
class _RunCases:
    """What a run's recorded rules say of its cases: each case's floor, and the agent each `handoff` check
    holds to account (its `from`), by the check's result name. `checks_known`: the case definitions were
    read (from the recorded case files, unchanged since the run)."""

    floors: dict[str, float]
    handoffs: dict[str, dict[str, str]]
    checks_known: bool


def _run_cases(con: Any, run_id: str) -> _RunCases:
    """Read from the rules the run recorded (kit.gate.rules.RunRules as JSON: `cases: {id: {floor, ...}}`,
    `files: {path: sha256}`). Read as data here: the gate's module reads the report's, never the reverse."""
    from kit.store import queries as q

    raw = q.run_rules_json(con, run_id)
    try:
        rules = json.loads(raw) if raw is not None else None
    except ValueError:
        rules = None
    if not isinstance(rules, dict):
        return _RunCases({}, {}, False)
    cases = rules.get("cases") if isinstance(rules.get("cases"), dict) else {}
    floors = {
        str(cid): float(rule["floor"])
        for cid, rule in cases.items()
        if isinstance(rule, dict) and isinstance(rule.get("floor"), int | float)
    }
    files = rules.get("files") if isinstance(rules.get("files"), dict) else {}
    handoffs: dict[str, dict[str, str]] = {}
    known = bool(files)
    for path, sha in files.items():
        if _sha256(Path(path)) != sha:  # edited since the run: its checks may not be the ones that ran
            known = False
            continue
        handoffs.update(_handoff_checks(path, sha))
    return _RunCases(floors, handoffs, known)


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


@functools.lru_cache(maxsize=64)
def _handoff_checks(path: str, sha: str) -> dict[str, dict[str, str]]:
    """case id -> {a `handoff` check's result name: the agent handing off}, for the cases of one case file
    (read once per content: the runs of one report share their files), by the check's type whatever the case
    named it."""
    from kit.case import load_suite

    out: dict[str, dict[str, str]] = {}
    for case in load_suite(path).cases:
        for spec in case.checks:
            who = spec.params.get("from") if spec.type == "handoff" else None
            if who:
                out.setdefault(case.id, {})[spec.label] = str(who)
    return out


def build(
    con: Any, run_ids: list[str], *, k: int, tags: dict[str, list[str]] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The payload for the runs and, apart, their runs_info rows (for the parts rendered in Python)."""
    tags = tags or {}
    runs = pd.runs_info(con, run_ids)
    ids = [r["run_id"] for r in runs]
    run_index = {r["run_id"]: i for i, r in enumerate(runs)}
    strings = _Strings()
    checks = pd.group(pd.check_rows(con, ids), "run_id", "case_id", "attempt")
    judges = pd.group(pd.judge_rows(con, ids), "run_id", "case_id", "attempt")
    traces: list[dict[str, Any] | None] = []
    trace_index: dict[str, int] = {}
    tables: _Pool = _Pool()
    tallies: list[dict[str, dict[str, int]]] = [{} for _ in runs]
    recorded = [_run_cases(con, r["run_id"]) for r in runs]
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for cr in pd.case_runs(con, ids):
        key = (cr["run_id"], cr["case_id"], cr["attempt"])
        trace = shrink_trace(cr["trace"])
        t, timing = -1, None
        if trace is not None:
            timing = _pop_latencies(trace)
            _pool_end_state(trace, tables)
            t = pool(traces, trace_index, trace)
        ri = run_index[cr["run_id"]]
        attempt_checks = []
        for c in checks.get(key, []):
            tallies[ri].setdefault(c["gate"] or "hard", {}).setdefault(c["outcome"], 0)
            tallies[ri][c["gate"] or "hard"][c["outcome"]] += 1
            attempt_checks.append(
                [
                    strings(c["check"]),
                    "s" if c["gate"] == "soft" else "h",
                    c["outcome"],
                    _num(c["score"], 4),
                    strings(c["reason"]),
                    _num(c["threshold"], 4),
                    strings(c["traceback"]),
                ]
            )
        attempt_judges = [
            [strings(j["check"]), j["judge_model"], j["rubric_hash"], _num(j["score"], 4), j["outcome"],
             strings(j["raw_answer"])]
            for j in judges.get(key, [])
        ]  # fmt: skip
        row = rows.get((cr["run_id"], cr["case_id"]))
        if row is None:
            rc = recorded[ri]
            row = rows[(cr["run_id"], cr["case_id"])] = {
                "r": ri,
                "id": cr["case_id"],
                "tags": _tags(cr["case_id"], tags),
                "att": [],
                # The floor the run recorded for this case (None: the run recorded none), shown beside its fraction.
                "flo": rc.floors.get(cr["case_id"]),
                # The handoff checks' agents at fault, by the checks' type (None: the case definitions are unknown).
                "ho": {str(strings(name)): who for name, who in rc.handoffs.get(cr["case_id"], {}).items()}
                if rc.checks_known
                else None,
            }
        row["att"].append(
            {
                "a": cr["attempt"],
                "ok": bool(cr["passed"]),
                "o": cr["outcome"] or ("pass" if cr["passed"] else "fail"),
                "e": _cut(cr["error"], [0]),
                "st": cr["steps"],
                "tk": cr["tokens"],
                "co": _num(cr["cost_usd"]),
                "la": _num(cr["latency_ms"], 1),
                "t": t,
                "tl": timing,
                "ch": attempt_checks,
                "j": attempt_judges,
            }
        )
    out_rows = [_summarise(row, k, strings) for row in rows.values()]
    check_lists: list[Any] = []
    check_index: dict[str, int] = {}
    for row in out_rows:
        for a in row["att"]:  # attempts that did the same thing have the same results: stored once
            a["ch"] = pool(check_lists, check_index, [_compact(c) for c in a["ch"]])
    out_rows.sort(key=lambda r: (runs[r["r"]]["control"], r["c"] / r["n"], -r["err"], r["r"], r["id"]))
    payload = {
        "k": k,
        "runs": [_run(r, tallies[i]) for i, r in enumerate(runs)],
        "rows": out_rows,
        "traces": traces,
        "tables": tables,
        "checks": check_lists,
        "S": strings.items,
    }
    # Beside each rubric soft gate, how far to trust it: its rubric's last calibration, or `uncalibrated`.
    for pr in payload["runs"]:
        pr["calibration"] = {}
    for g in soft_gate_calibrations(con, ids):
        payload["runs"][run_index[g["run_id"]]]["calibration"][g["check"]] = g["calibration"]
    return payload, runs


OUTCOME_CODES = {"pass": "p", "fail": "f", "error": "e", "skipped": "s"}


def _compact(c: list[Any]) -> list[Any]:
    """[name, gate, outcome, score, reason, threshold, traceback] as the page stores it: outcome as one
    letter, reason before the rarely set score, trailing empties dropped (thousands of results per page)."""
    name, gate, outcome, score, reason, threshold, tb = c
    out = [name, gate, OUTCOME_CODES.get(outcome, outcome), reason, score, threshold, tb]
    while len(out) > 3 and out[-1] in (None, -1):
        out.pop()
    return out


def _tags(case_id: str, tags: dict[str, list[str]]) -> list[str]:
    if case_id in tags:
        return tags[case_id]
    if case_id.startswith("redteam/"):  # redteam/<attack>/<strategy>
        parts = case_id.split("/")
        return ["redteam", *parts[2:3]]
    return []


def _summarise(row: dict[str, Any], k: int, strings: _Strings) -> dict[str, Any]:
    from kit.aggregate import pass_hat_k

    att = row["att"]
    n, c = len(att), sum(1 for a in att if a["ok"])
    failing: dict[int, int] = {}
    for a in att:
        for ch in a["ch"]:
            if ch[2] in FAILING and ch[1] == "h":
                failing[ch[0]] = failing.get(ch[0], 0) + 1
    first_reason = next(
        (ch[4] for a in att for ch in a["ch"] if ch[2] in FAILING and ch[1] == "h"),
        next((strings(a["e"]) for a in att if a["e"]), -1),
    )
    return {
        **row,
        "n": n,
        "c": c,
        "err": sum(1 for a in att if a["o"] == "error" or a["e"]),
        "phk": None if k > n else round(pass_hat_k(c, n, k), 4),
        "fl": 0 < c < n,
        "fc": sorted(failing, key=lambda i: (-failing[i], strings.items[i])),
        "why": first_reason,
    }


def _run(r: dict[str, Any], tally: dict[str, dict[str, int]]) -> dict[str, Any]:
    return {
        "id": r["run_id"],
        "src": r["display_source"],
        "agent": r["agent"],
        "model": r["model"],
        "git": (r["git_sha"] or "")[:10],
        "status": r["status"],
        "started": str(r["started_at"])[:19] if r["started_at"] else None,
        "control": r["control"],
        "tally": tally,
    }


def to_script_json(payload: dict[str, Any]) -> str:
    """JSON that is safe inside <script type="application/json">: no `<`, `>` or `&` survives literally,
    so no value (a trace is hostile input) can close the element or open another."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
