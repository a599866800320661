"""A suite run written to the store: the kit's runner over a plan's cases, each result stored as it lands
(or written to a file when the store cannot take it), and the merge of CI shards into one suite run.

    from kit.runner.store_writer import RunRequest, run_plan, run_merge

    code = run_plan(plan, RunRequest(save_runs="runs.jsonl"))  # `kit run`'s exit code
    code, run_ids = run_merge(RunRequest(merge=["shard-1", "shard-2"], store=".kit/evals.duckdb"))

`kit run` (kit.commands.run) is the command line over these; `make evals` calls them directly.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.errors import KitInputError
from kit.store.values import now


@dataclass(frozen=True)
class RunRequest:
    """What to do with a plan: the command line's options, for a caller that has a plan already (the
    pipeline's kit stage)."""

    runs: int | None = None
    only: list[str] | None = None
    shard: str | None = None
    out: str | None = None
    save_runs: str | None = None
    no_store: bool = False
    json: bool = False
    quiet: bool = False
    verbose: bool = False
    workers: int | None = None
    pool: str = "process"
    merge: list[str] | None = None
    store: str | None = None  # with `merge`: the store to merge into


def run_plan(the_plan: Any, request: RunRequest) -> int:
    """Run the plan's suite as the request says; results to the plan's store as they land. The exit code
    of `kit run`: 0 every run passed, 1 some failed, 2 bad input or results not stored."""
    try:
        return _run(request, the_plan)
    except KitInputError as e:
        print(f"kit run: {e}", file=sys.stderr)
        return 2


def _run(args: RunRequest, the_plan: Any) -> int:
    from kit.aggregate import summarize
    from kit.runner import RunOptions, jobs_for, parse_shard, run_suite, shard_cases
    from kit.runner.output import Progress, report
    from kit.runner.recorded import RunsWriter
    from kit.store.shards import shard_record, suite_hash

    if args.runs is not None and args.runs < 1:
        raise KitInputError(f"--runs must be at least 1, got {args.runs}")
    timeout = the_plan.timeout
    if not (math.isfinite(timeout) and timeout > 0):
        raise KitInputError(f"--timeout must be a positive number of seconds, got {timeout}")
    shard = parse_shard(args.shard) if args.shard else None
    suite = the_plan.suite
    for e in suite.errors:
        print(f"kit run: {e}", file=sys.stderr)
    cases = suite.cases
    if args.only:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.id, g) for g in args.only)]
    if not cases:
        raise KitInputError("no cases to run" + (f" match {args.only}" if args.only else ""), file=str(the_plan.cases))
    suite_cases = cases
    if shard:
        cases = shard_cases(cases, *shard, runs=args.runs)
    agent = the_plan.agent
    rules = _rules(the_plan, suite_cases, args)  # the whole suite's: a shard's run row becomes the merged run's

    jobs = jobs_for(cases, args.runs)
    ids = [c.id for c in cases]
    run_id = the_plan.settings.run_id or _new_run_id()
    run_row = {
        "run_id": run_id,
        "source": "kit",
        "kind": the_plan.kind,
        "evals_id": the_plan.evals_id,  # the `make evals` this run belongs to, if any
        "started_at": now(),
        "agent": agent.name,
        "model": the_plan.model,
        "config_hash": _config_hash(agent.name, cases, args.runs),
        "meta": {
            # Which slice of which suite this is, so a merge can tell a missing, doubled or foreign shard.
            "shard": shard_record(*(shard or (1, 1)), suite_hash(suite_cases, args.runs), len(suite_cases), ids),
            "workers": args.workers,
            "pool": args.pool,
            "runs": len(jobs),
        },
        "rules": rules.to_dict(),
    }
    if not (shard or args.no_store):
        _refuse_newer_store(the_plan.store)
    sink = _Sink(str(the_plan.store), args, run_row, to_file=bool(shard or args.no_store))
    where = f" (shard {shard[0]}/{shard[1]})" if shard else ""
    if not args.json:
        print(f"kit run {run_id}: {len(cases)} cases, {len(jobs)} runs on {agent.name}{where}", file=sys.stderr)
    progress = Progress(len(jobs), enabled=not args.quiet)
    t0 = time.perf_counter()

    saved = RunsWriter(args.save_runs) if args.save_runs else None

    def landed(outcome: Any) -> None:
        progress.update(outcome.case_run)
        sink.add(outcome)
        if saved is not None:
            saved.add(outcome)

    options = RunOptions(
        runs=args.runs,
        timeout=timeout,
        workers=args.workers,
        mode=args.pool,
        shard=shard,
        concurrency=the_plan.settings.concurrency,  # the setting, validated wherever it came from
    )
    outcomes = _not_loaded(suite.errors, run_id) if not args.only else []
    for outcome in outcomes:
        sink.add(outcome)
        if saved is not None:
            saved.add(outcome)
    try:
        outcomes += run_suite(jobs, agent, options, run_id=run_id, on_outcome=landed)
    finally:
        if saved is not None:
            saved.close()
    wall = time.perf_counter() - t0
    if run_row["model"] is None:  # no model set: the traces' own
        run_row["model"] = next((m for o in outcomes if (m := the_plan.model_of(o.trace or {}))), None)
    destination = sink.close(outcomes, complete=not suite.errors)

    runs = [o.case_run for o in outcomes]
    summary = summarize(runs)
    if args.json:
        out = {
            "run_id": run_id,
            "agent": agent.name,
            "results_at": destination,
            "wall_s": round(wall, 3),
            "results": [r.to_dict() for r in runs],
            "summary": summary,
        }
        print(json.dumps(out, default=str))
    else:
        report(runs, summary, verbose=args.verbose)
        print(f"{len(jobs)} runs in {wall:.2f}s ({len(jobs) / max(wall, 1e-9):.1f} runs/s); results: {destination}")
    if suite.errors or sink.failed:
        return 2
    return 0 if runs and all(r.passed for r in runs) else 1


def _rules(the_plan: Any, cases: list[Any], args: RunRequest) -> Any:
    """The rules this run runs under (kit.gate.rules), recorded with it: the gate judges it by these."""
    return the_plan.rules(case_ids=[c.id for c in cases], runs=args.runs, with_errors=not args.only)


def _refuse_newer_store(path: Path) -> None:
    """A store a newer kit wrote is bad input before any agent call, not after every run was paid for."""
    from kit.store import open_store
    from kit.store.schema import NewerSchemaError

    if not Path(path).is_file():
        return
    try:
        with open_store(path).connect(merge=False):
            pass
    except NewerSchemaError:
        raise  # a KitInputError: exit 2, naming the version found and the one expected
    except Exception:  # any other trouble with the store is the sink's to report (results go to a file)
        return


def _not_loaded(errors: list[KitInputError], run_id: str) -> list[Any]:
    """A case that did not load is an error result of the run, named by its case id (or its file), so
    every report and gate sees the hole instead of a suite that merely looks smaller."""
    from kit.evaluate import error_run
    from kit.runner import Invocation

    out, seen = [], set()
    for e in errors:
        case_id = e.case or f"<{e.file or 'cases'}>"
        if case_id in seen:
            continue
        seen.add(case_id)
        out.append(Invocation(error_run(case_id, 0, f"not run: the case did not load: {e}", run_id=run_id), None))
    return out


def run_merge(request: RunRequest) -> tuple[int, list[str]]:
    """`kit run --merge` as a function: (the exit code, the run ids the shards held)."""
    try:
        return _merged(request)
    except KitInputError as e:
        print(f"kit run: {e}", file=sys.stderr)
        return 2, []


def _merged(args: RunRequest) -> tuple[int, list[str]]:
    """`--merge SHARD...`: the last job of a CI matrix loads every shard and gates on the whole suite."""
    from kit.aggregate import summarize
    from kit.runner.output import report
    from kit.store import open_store
    from kit.store.shards import load_case_runs, merge_suite

    for p in args.merge:
        if not Path(p).exists():
            raise KitInputError("no such shard file or folder", file=p)
    store = open_store(args.store)
    with store.connect() as con:
        # Every shard checked against the others before anything is stored: a missing, doubled, foreign or
        # corrupt one is refused, naming it, and no partial run is stored as complete.
        shards, added = merge_suite(con, args.merge)
        run_ids = [shards[0].run_id]
        runs = load_case_runs(con, run_ids[0])
    summary = summarize(runs)
    if args.json:
        print(
            json.dumps(
                {"run_ids": run_ids, "merged": added, "results": [r.to_dict() for r in runs], "summary": summary},
                default=str,
            )
        )
    else:
        print(
            f"kit run: merged {len(args.merge)} shard(s) into {store.path}: "
            f"{added['case_results']} new results of run {', '.join(run_ids)}",
            file=sys.stderr,
        )
        report(runs, summary, verbose=args.verbose)
    return (0 if runs and all(r.passed for r in runs) else 1), run_ids


def _config_hash(agent: str, cases: list[Any], runs: int | None) -> str:
    """Same agent, same cases and checks, same N: same hash (so runs are comparable)."""
    h = hashlib.sha256(f"{agent}|{runs}".encode())
    for c in sorted(cases, key=lambda c: c.id):
        h.update(json.dumps([c.id, c.input, [s.raw for s in c.checks]], sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def _new_run_id() -> str:
    try:
        from kit.store import new_run_id

        return new_run_id("kit")
    except ImportError:  # pragma: no cover - the store ships with the kit
        import uuid

        return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-kit-" + uuid.uuid4().hex[:6]


# Results per store write, and the longest a finished result waits for its write: an append to the store's
# spool survives a SIGKILL of this process, so a killed run loses at most FLUSH_S worth of results.
RECORD_BATCH = 64
FLUSH_S = 0.25


class _Sink:
    """Results to the store as they land (in batches, each written within FLUSH_S), or to a file at the
    end. If the store cannot be written, everything goes to the JSON file instead, the message says so,
    and `failed` makes the exit 2."""

    def __init__(self, store: str, args: RunRequest, run_row: dict[str, Any], *, to_file: bool) -> None:
        self.args, self.run_row, self.store = args, run_row, None
        self.run: Any = None  # the run in the store (kit.store.lifecycle)
        self.failed = False
        self.pending: list[Any] = []
        self.lock = threading.RLock()
        self.closed = threading.Event()
        if to_file:
            return
        try:
            from kit.store import open_store
            from kit.store.lifecycle import open_run

            self.store = open_store(store)
            self.run = open_run(
                self.store,
                "kit",
                kind=run_row["kind"],
                evals_id=run_row["evals_id"],
                agent=run_row["agent"],
                model=run_row["model"],
                config_hash=run_row["config_hash"],
                run_id=run_row["run_id"],
                meta=run_row["meta"],
                rules=run_row["rules"],
            )
        except Exception as e:  # the store is optional: results must never be lost because of it
            self._store_failed(e)
            return
        threading.Thread(target=self._flush_often, name="kit-run-flush", daemon=True).start()

    def _store_failed(self, e: Exception) -> None:
        print(f"kit run: store unavailable ({type(e).__name__}: {e}); writing results to a file", file=sys.stderr)
        self.store = None
        self.failed = True

    def add(self, outcome: Any) -> None:
        if self.store is None:
            return
        with self.lock:
            self.pending.append(outcome)
            full = len(self.pending) >= RECORD_BATCH
        if full:
            self.flush()

    def flush(self) -> None:
        with self.lock:
            batch, self.pending = self.pending, []
            if self.store is None or not batch:
                return
            try:
                self.run.record_many([(o.case_run, o.trace) for o in batch])
            except Exception as e:
                self._store_failed(e)

    def _flush_often(self) -> None:
        """Results landing one by one are written within FLUSH_S, even while the next run hangs."""
        while not self.closed.wait(FLUSH_S):
            self.flush()

    def close(self, outcomes: list[Any], *, complete: bool = True) -> str:
        """Finish the run (`incomplete` when cases are missing); returns where the results are."""
        from kit.store.shards import rows, write_file

        status = "complete" if complete else "incomplete"
        self.closed.set()
        self.flush()
        if self.store is not None:
            try:
                status = self.run.finish(complete=complete, merge=False, model=self.run_row["model"])
            except Exception as e:
                self._store_failed(e)
        if self.store is not None:
            from kit.store import StoreError

            try:
                self.store.merge()
            except StoreError as e:  # not a store at all: no reader will see these results
                print(f"kit run: {e} (the results stay in {self.store.spool})", file=sys.stderr)
                self.failed = True
            except Exception as e:  # the results are in the spool: the next reader merges them
                print(f"kit run: {self.store.path}: not merged yet ({type(e).__name__}: {e})", file=sys.stderr)
            self.store.close()
            if not self.args.out:
                return str(self.store.path)
            self.run_row.update(status=status, finished_at=now())
            written = write_file(self.args.out, rows(self.run_row, outcomes))
            return f"{self.store.path} and {written}"
        self.run_row.update(status=status, finished_at=now())
        args = self.args
        if args.out:
            path = args.out
        elif args.shard:
            i, n = args.shard.split("/")
            path = f".kit/shards/{self.run_row['run_id']}-{i}-of-{n}"
        else:
            path = f".kit/runs/{self.run_row['run_id']}.json"
        return str(write_file(path, rows(self.run_row, outcomes)))
