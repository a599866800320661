"""`make evals`: every stage on the golden set, one store, one summary, one verdict.

Stages run one after another as subprocesses (each tool keeps its own process model); a stage that fails
is reported and the next still runs, so one broken tool never hides the others' results. Then the runs
this invocation wrote are read back from the store: one summary per source, gate and case, an HTML
report, JUnit XML, a comparison with the previous runs, and the verdict of `kit gate` on each run.
"""

from __future__ import annotations

import argparse
import html
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OUT = Path(".kit")


@dataclass
class Stage:
    name: str
    argv: list[str]
    note: str


@dataclass
class StageResult:
    stage: Stage
    code: int
    seconds: float
    log: Path


def stages(variant: str | None, shards: Path | None, agent: str | None = None) -> list[Stage]:
    kit = [sys.executable, "-m", "kit.cli"]
    make = ["make", "--no-print-directory", "-s"]
    variant_args = ["--variant", variant] if variant else []
    if agent:
        variant_args += ["--agent", agent]
    if shards is not None and any(shards.glob("*")):
        runner = Stage(
            "kit",
            [*kit, "run", "-q", "--merge", *sorted(str(p) for p in shards.iterdir())],
            "the kit's runner (merged from CI shards)",
        )
    else:
        runner = Stage(
            "kit", [*kit, "run", "-q", "--cases", "golden", *variant_args], "the kit's runner on the reference agent"
        )
    return [
        Stage("lint", [*kit, "lint", "golden"], "golden cases are valid"),
        runner,
        Stage("deepeval", [*make, "deepeval-evals"], "deepeval test run tests/evals"),
        Stage("promptfoo", [*make, "promptfoo-eval"], "npx promptfoo eval (golden cases)"),
        Stage("redteam", [*make, "promptfoo-redteam"], "npx promptfoo redteam run (offline attacks)"),
    ]


def run_stage(stage: Stage, env: dict[str, str], logs: Path) -> StageResult:
    log = logs / f"{stage.name}.log"
    print(f"==> {stage.name}: {stage.note}", flush=True)
    started = time.perf_counter()
    with log.open("w") as f:
        f.write(f"$ {shlex.join(stage.argv)}\n")
        f.flush()
        try:
            code = subprocess.run(
                stage.argv, stdout=f, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL, check=False
            ).returncode
        except OSError as e:
            f.write(f"cannot start: {e}\n")
            code = 127
    seconds = time.perf_counter() - started
    tail = log.read_text(errors="replace").strip().splitlines()[-4:]
    print(f"    exit {code} in {seconds:.1f} s; log {log}")
    if code != 0:
        for line in tail:
            print(f"    | {line[:160]}")
    return StageResult(stage, code, seconds, log)


def _rows(con: Any, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def is_control(run: dict[str, Any]) -> bool:
    """A deliberately vulnerable target (label `control-…`): it must fail, which its stage checks, so its
    findings are shown apart and it is not gated."""
    return str(run.get("model") or "").startswith("control-") or str(run.get("agent") or "").startswith("control-")


def run_ids(con: Any) -> set[str]:
    return {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()}


def new_runs(con: Any, before: set[str]) -> list[dict[str, Any]]:
    """The runs this invocation wrote (merged shards keep their own, earlier, start times)."""
    return _rows(
        con,
        """
        SELECT r.run_id, r.source, r.status, r.agent, r.model, r.started_at,
               count(c.run_id) AS runs, count_if(c.passed) AS passed,
               count(DISTINCT c.case_id) AS cases
        FROM runs r LEFT JOIN case_results c USING (run_id)
        WHERE r.run_id NOT IN (SELECT unnest(?::VARCHAR[])) GROUP BY ALL ORDER BY r.started_at""",
        [sorted(before)],
    )


def gate_counts(con: Any, run_ids: list[str]) -> list[dict[str, Any]]:
    return _rows(
        con,
        """
        SELECT r.source, k.gate, k.outcome, count(*) AS n
        FROM check_results k JOIN runs r USING (run_id)
        WHERE k.run_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY ALL ORDER BY ALL""",
        [run_ids],
    )


def case_matrix(con: Any, run_ids: list[str]) -> dict[str, dict[str, tuple[int, int]]]:
    rows = _rows(
        con,
        """
        SELECT c.case_id, r.source AS src, count(*) AS n, count_if(c.passed) AS c
        FROM case_results c JOIN runs r USING (run_id)
        WHERE c.run_id IN (SELECT unnest(?::VARCHAR[])) AND NOT starts_with(c.case_id, 'redteam/')
        GROUP BY ALL""",
        [run_ids],
    )
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for r in rows:
        out.setdefault(r["case_id"], {})[r["src"]] = (r["c"], r["n"])
    return out


def failing_checks(con: Any, run_ids: list[str]) -> list[dict[str, Any]]:
    return _rows(
        con,
        """
        SELECT r.source, k.case_id, k."check", k.gate, k.outcome, any_value(k.reason) AS reason, count(*) AS n
        FROM check_results k JOIN runs r USING (run_id)
        WHERE k.run_id IN (SELECT unnest(?::VARCHAR[])) AND k.outcome IN ('fail', 'error')
        GROUP BY ALL ORDER BY r.source, k.case_id, k."check" """,
        [run_ids],
    )


def junit(con: Any, runs: list[dict[str, Any]]) -> str:
    """JUnit XML: a testsuite per run, a testcase per case run; failing hard checks are the failure text,
    soft gates without a judge are skipped testcases (never passes)."""
    parts = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
    for run in runs:
        cases = _rows(
            con,
            """
            SELECT case_id, attempt, passed, outcome, error, latency_ms FROM case_results
            WHERE run_id = ? ORDER BY case_id, attempt""",
            [run["run_id"]],
        )
        checks = _rows(
            con,
            """
            SELECT case_id, attempt, "check", gate, outcome, reason FROM check_results
            WHERE run_id = ? AND outcome <> 'pass'""",
            [run["run_id"]],
        )
        by_case: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for k in checks:
            by_case.setdefault((k["case_id"], k["attempt"]), []).append(k)
        soft = [k for k in checks if k["gate"] == "soft"]
        failures = sum(not c["passed"] and c["outcome"] != "error" and not c["error"] for c in cases)
        errors = sum(c["outcome"] == "error" or bool(c["error"]) for c in cases)
        skipped = sum(k["outcome"] == "skipped" for k in soft)
        name = html.escape(f"{run['source']}:{run['run_id']}", quote=True)
        parts.append(
            f'  <testsuite name="{name}" tests="{len(cases) + len(soft)}" failures="{failures}" '
            f'errors="{errors}" skipped="{skipped}">'
        )
        for c in cases:
            tc = html.escape(f"{c['case_id']}#{c['attempt']}", quote=True)
            secs = (c["latency_ms"] or 0) / 1000
            bad = [k for k in by_case.get((c["case_id"], c["attempt"]), []) if k["gate"] == "hard"]
            body = "\n".join(f"{k['outcome']}: {k['check']}: {k['reason']}" for k in bad)
            parts.append(f'    <testcase classname="{html.escape(run["source"])}" name="{tc}" time="{secs:.3f}">')
            if c["error"] or c["outcome"] == "error":
                msg = html.escape(str(c["error"] or body), quote=True)
                parts.append(f'      <error message="{msg[:500]}">{html.escape(body or str(c["error"]))}</error>')
            elif not c["passed"]:
                first = html.escape(f"{bad[0]['check']}: {bad[0]['reason']}" if bad else "failed", quote=True)
                parts.append(f'      <failure message="{first[:500]}">{html.escape(body)}</failure>')
            parts.append("    </testcase>")
        for k in soft:
            tc = html.escape(f"{k['case_id']}#{k['attempt']} [soft:{k['check']}]", quote=True)
            reason = html.escape(str(k["reason"] or ""), quote=True)
            parts.append(f'    <testcase classname="{html.escape(run["source"])}.soft" name="{tc}">')
            tag = {"skipped": "skipped", "error": "error"}.get(k["outcome"], "failure")
            parts.append(f'      <{tag} message="{reason[:500]}"/>')
            parts.append("    </testcase>")
        parts.append("  </testsuite>")
    parts.append("</testsuites>")
    return "\n".join(parts) + "\n"


def summary_text(
    runs: list[dict[str, Any]],
    gates: list[dict[str, Any]],
    matrix: dict[str, dict[str, tuple[int, int]]],
    failing: list[dict[str, Any]],
    results: list[StageResult],
) -> str:
    lines = ["", "== stages"]
    for r in results:
        lines.append(f"  {r.stage.name:<10} exit {r.code:<4} {r.seconds:>7.1f} s   {r.stage.note}")
    lines.append(f"  {'total':<10} {'':<9} {sum(r.seconds for r in results):>7.1f} s")
    lines.append("\n== runs (per source)")
    for r in runs:
        rate = f"{r['passed'] / r['runs']:.0%}" if r["runs"] else "-"
        role = "  CONTROL: must fail, not gated" if is_control(r) else ""
        lines.append(
            f"  {r['source']:<10} {r['run_id']:<34} {r['status'] or '':<10} "
            f"{r['passed']}/{r['runs']} case runs passed ({rate}), {r['cases']} cases  "
            f"[{r['model'] or r['agent'] or ''}]{role}"
        )
    lines.append("\n== checks (per source and gate)")
    table: dict[tuple[str, str], dict[str, int]] = {}
    for g in gates:
        table.setdefault((g["source"], g["gate"]), {})[g["outcome"]] = g["n"]
    for (src, gate), counts in sorted(table.items()):
        shown = ", ".join(f"{counts.get(o, 0)} {o}" for o in ("pass", "fail", "error", "skipped") if counts.get(o))
        lines.append(f"  {src:<10} {gate:<5} {shown}")
    sources = sorted({s for per in matrix.values() for s in per})
    lines.append("\n== cases (passed/runs per source)")
    lines.append("  " + f"{'case':<40}" + "".join(f"{s:>20}" for s in sources))
    for case_id in sorted(matrix):
        cells = []
        for s in sources:
            c_n = matrix[case_id].get(s)
            cells.append(f"{'-' if c_n is None else f'{c_n[0]}/{c_n[1]}' + ('' if c_n[0] == c_n[1] else ' !'):>20}")
        lines.append("  " + f"{case_id[:40]:<40}" + "".join(cells))
    if failing:
        by_check: dict[str, dict[str, set[str]]] = {}
        for f in failing:
            by_check.setdefault(f["check"], {}).setdefault(f["source"], set()).add(f["case_id"])
        lines.append("\n== failing checks by name (the faults they catch)")
        ranked = sorted(by_check.items(), key=lambda kv: -sum(len(c) for c in kv[1].values()))
        for check, per_source in ranked:
            shown = ", ".join(f"{src} {len(cases)} cases" for src, cases in sorted(per_source.items()))
            lines.append(f"  {check:<44} {shown}")
        lines.append("\n== failing checks")
        for f in failing[:60]:
            lines.append(
                f"  {f['source']:<10} {f['case_id']:<34} {f['gate']} {f['outcome']}: {f['check']}: "
                f"{str(f['reason'])[:140]} (x{f['n']})"
            )
        if len(failing) > 60:
            lines.append(f"  ... and {len(failing) - 60} more (kit report --run ID)")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kit evals", description=__doc__)
    parser.add_argument("--variant", default=os.environ.get("VARIANT") or None, help="a fault variant")
    parser.add_argument(
        "--agent",
        default=os.environ.get("KIT_AGENT") or None,
        help="your agent, module:callable, for every stage (default: the reference agent)",
    )
    parser.add_argument("--only", nargs="*", help="run only these stages")
    parser.add_argument("--shards", type=Path, help="merge these CI shard results instead of running the kit stage")
    parser.add_argument("--baseline-store", type=Path, help="a store from the base branch, to compare against")
    parser.add_argument("--out", type=Path, default=OUT, help="where the summary, reports and logs go (.kit)")
    args = parser.parse_args(argv)

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "logs"
    logs.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update({"DEEPEVAL_TELEMETRY_OPT_OUT": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    if args.variant:
        env["KIT_VARIANT"] = args.variant
    if args.agent:
        env["KIT_AGENT"] = args.agent  # DeepEval and Promptfoo take the same plug-in as `kit run --agent`
    from kit.store import open_store

    store = open_store()
    if args.baseline_store and args.baseline_store.is_file():
        copied = import_runs(store, args.baseline_store)
        print(f"==> baseline: {copied} runs copied from {args.baseline_store}")
    with store.connect() as con:
        before = run_ids(con)

    results = [
        run_stage(s, env, logs) for s in stages(args.variant, args.shards) if not args.only or s.name in args.only
    ]

    with store.connect() as con:
        runs = new_runs(con, before)
        gated = [r["run_id"] for r in runs if not is_control(r)]
        text = summary_text(runs, gate_counts(con, gated), case_matrix(con, gated), failing_checks(con, gated), results)
        (out / "junit.xml").write_text(junit(con, runs))
        previous = {r["run_id"]: previous_run(con, r) for r in runs}
    print(text)
    (out / "summary.txt").write_text(text)

    kit_cli = [sys.executable, "-m", "kit.cli"]
    kit_run = next((r["run_id"] for r in reversed(runs) if r["source"] == "kit"), None)
    if kit_run:
        subprocess.run(
            [*kit_cli, "report", "--run", kit_run, "--html", str(out / "report.html")],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        print(f"HTML report: {out / 'report.html'}; JUnit XML: {out / 'junit.xml'}")
        if previous.get(kit_run):
            cmp = subprocess.run(
                [*kit_cli, "compare", previous[kit_run], kit_run], capture_output=True, text=True, check=False
            )
            (out / "compare.md").write_text(f"### Evals: comparison with the previous run\n\n```\n{cmp.stdout}```\n")

    verdicts = []
    for r in runs:
        if is_control(r):
            continue
        cmd = [*kit_cli, "gate", "--run", r["run_id"]]
        if previous.get(r["run_id"]):
            cmd += ["--baseline", previous[r["run_id"]]]
        verdicts.append(subprocess.run(cmd, check=False).returncode)
    # A stage that exited non-zero without writing a run is broken, not merely failing: it fails the build.
    wrote = {r["source"] for r in runs}
    expected_source = {"kit": "kit", "deepeval": "deepeval", "promptfoo": "promptfoo", "redteam": "promptfoo"}
    broken = [
        r.stage.name
        for r in results
        if r.code != 0 and (r.stage.name == "lint" or expected_source.get(r.stage.name) not in wrote)
    ]
    if broken:
        print(f"make evals: stage(s) {', '.join(broken)} failed without results; see {logs}/", file=sys.stderr)
    if not runs:
        print("make evals: no run reached the store", file=sys.stderr)
    ok = runs and not broken and all(v == 0 for v in verdicts)
    print("make evals: PASSED" if ok else "make evals: FAILED")
    return 0 if ok else 1


def previous_run(con: Any, run: dict[str, Any]) -> str | None:
    """The latest earlier complete run of the same source and agent, never a red-team control (which fails
    on purpose): the baseline for flips. The model may differ: what flipped between models is the question."""
    row = con.execute(
        """
        SELECT run_id FROM runs WHERE source = ? AND coalesce(agent, '') = coalesce(?, '') AND started_at < ?
          AND coalesce(status, 'complete') = 'complete' AND NOT starts_with(coalesce(model, ''), 'control-')
        ORDER BY started_at DESC LIMIT 1""",
        [run["source"], run["agent"], run["started_at"]],
    ).fetchone()
    return row[0] if row else None


def import_runs(store: Any, other: Path) -> int:
    """Copy the runs of another store (say the base branch's) that this one lacks, with their results."""
    with store.connect() as con:
        con.execute(f"ATTACH {_sql_str(str(other))} AS base (READ_ONLY)")
        try:
            con.execute("CREATE TEMP TABLE new_runs AS SELECT run_id FROM base.runs EXCEPT SELECT run_id FROM runs")
            for table in ("runs", "case_results", "check_results"):
                # Only the columns both stores have: the other one may be of an older schema version.
                cols = con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_catalog = 'base' "
                    "AND table_name = ? INTERSECT SELECT column_name FROM information_schema.columns "
                    "WHERE table_catalog <> 'base' AND table_name = ?",
                    [table, table],
                ).fetchall()
                names = ", ".join(f'"{c}"' for (c,) in cols)
                con.execute(
                    f"INSERT INTO {table} ({names}) SELECT {names} FROM base.{table} "
                    "WHERE run_id IN (SELECT run_id FROM new_runs)"
                )
            return con.execute("SELECT count(*) FROM new_runs").fetchone()[0]
        finally:
            con.execute("DROP TABLE IF EXISTS new_runs")
            con.execute("DETACH base")


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


if __name__ == "__main__":
    sys.exit(main())
