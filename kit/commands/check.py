"""`kit check TRACE... --cases PATH [--json]` (contract in docs/CONTRACT.md).

Each trace is judged as it is read and then let go: what is kept per run is a reference to what the summary
reads of it (`_Tally`), and with --json its encoded result, spooled to a temporary file. Memory does not grow
with the traces (bench/import_stream.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import io
import json
import os
import sys
from typing import IO, Any

import orjson

from kit.aggregate import summarize
from kit.case import Case, load_suite
from kit.errors import KitInputError
from kit.evaluate import evaluate
from kit.result import CaseRun, Result
from kit.trace import Trace, iter_traces


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="+", metavar="TRACE", help="trace files (JSON, a JSON list, or JSONL)")
    parser.add_argument("--cases", required=True, metavar="PATH", help="a case file or a folder of them")
    parser.add_argument("--invariants", metavar="FILE", help="invariants file (default: nearest invariants.yaml)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


# Pydantic's documented switch for its plugins (`PYDANTIC_DISABLE_PLUGINS`). Without it, the first model
# built scans every installed package's entry points for plugins (bench/check_startup.py). This command runs
# no user code, only the kit's own models, so none is wanted here; a value the user set is kept.
_NO_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"


def main(args: argparse.Namespace) -> int:
    # Judging makes many short-lived objects and no reference cycles: reference counting frees them, and the
    # cyclic collector would only walk every live object again and again (a tenth of the time per trace).
    collecting = gc.isenabled()
    gc.disable()
    plugins = os.environ.get(_NO_PLUGINS)
    if plugins is None:
        os.environ[_NO_PLUGINS] = "__all__"
    try:
        return _check(args)
    finally:
        if plugins is None:  # the process's models built after this (kit.cli.main called in-process) see them
            os.environ.pop(_NO_PLUGINS, None)
        if collecting:
            gc.enable()


def _check(args: argparse.Namespace) -> int:
    if not args.json:
        return _judge_all(args, None)
    import tempfile  # only --json spools

    with tempfile.TemporaryFile(buffering=1 << 16) as tmp:  # the spool: a write per 64 KiB, not per 8
        return _judge_all(args, _Spool(tmp))


def _judge_all(args: argparse.Namespace, spool: _Spool | None) -> int:
    suite = load_suite(args.cases, args.invariants)
    errors: list[KitInputError] = list(suite.errors)
    cases = suite.by_id()
    kept = _Tally()
    for path in args.traces:
        # A bad trace in a file is reported; the good ones around it are still judged.
        read = 0
        for item in iter_traces(path):
            read += 1
            if isinstance(item, KitInputError):
                errors.append(item)
                continue
            case = cases.get(item.case_id)
            if case is None:
                errors.append(KitInputError("no golden case with this id", file=path, case=item.case_id))
                continue
            run = judge(item, case)
            if spool is not None:
                spool.add(run_dict(run, item))
            else:
                print_run(run, item)
            kept.add(run)
        if read == 0:
            errors.append(KitInputError(f"no traces in {path}: nothing was checked", file=path))
    for e in errors:
        print(f"kit check: {e}", file=sys.stderr)
    if spool is not None:
        spool.write(summarize(kept.runs))
    elif kept.runs:
        s = summarize(kept.runs)
        print(f"{s['passed']}/{s['runs']} runs passed ({s['pass_rate']:.0%}); {s['errors']} errors")
    if errors:
        return 2
    return 0 if all(r.passed for r in kept.runs) else 1


class _Tally:
    """Each run as the summary reads it (passed, outcome, and the first reason of each failing check of its
    case), a few bytes a run: a run that adds no failing check its case has not shown yet is a reference to
    one shared run of its case with the same outcome."""

    def __init__(self) -> None:
        self.runs: list[CaseRun] = []
        self._seen: dict[str, set[str]] = {}
        self._shared: dict[tuple[str, str, bool], CaseRun] = {}

    def add(self, run: CaseRun) -> None:
        seen = self._seen.setdefault(run.case_id, set())
        names = {f.name for f in run.failures} | ({"(run error)"} if run.error is not None else set())
        if names <= seen:
            key = (run.case_id, run.outcome, run.passed)
            shared = self._shared.get(key)
            if shared is None:
                shared = self._shared[key] = dataclasses.replace(run, results=run.failures, metrics={})
            self.runs.append(shared)
            return
        seen |= names
        self.runs.append(dataclasses.replace(run, results=run.failures, metrics={}))


def judge(trace: Trace, case: Case) -> CaseRun:
    """Every check of the case on the trace, and a failed `turns` result when a scripted conversation
    (`turns:`) was recorded with another number of turns: a `turn: N` check means nothing then."""
    run = evaluate(trace, case)
    mismatch = turn_count(trace, case)
    return run if mismatch is None else dataclasses.replace(run, results=(mismatch, *run.results))


def turn_count(trace: Trace, case: Case) -> Result | None:
    if case.turns is None:
        return None
    have, want = len(trace.turns) or 1, len(case.turns)
    if have == want:
        return None
    return Result(
        "turns",
        False,
        f"the conversation has {have} turn{'s' * (have != 1)}, the case scripts {want} (its `turns:`): a user "
        "message starts a turn, so the recording holds another conversation than the case",
    )


def held_calls(trace: Trace) -> list[dict[str, Any]]:
    """The calls the model asked for that never ran (kept in the trace as `"executed": false`)."""
    return [{"tool": s.name, "turn": s.turn} for s in trace.held_calls]


def run_dict(run: CaseRun, trace: Trace) -> dict[str, Any]:
    d = run.to_dict()
    held = held_calls(trace)
    if held:
        d["requested_not_run"] = held
    return d


def print_run(run: CaseRun, trace: Trace) -> None:
    from kit.names import printable  # what a trace names (agents, tools) may hold escape sequences or CRs

    mark = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}[run.outcome]
    print(f"{mark}  {printable(run.case_id)} (attempt {run.attempt})")
    if run.error:
        print(f"      error: {printable(run.error)}")
    for f in run.failures:
        print(f"      {f.outcome}: {printable(f.name)}: {printable(f.reason)}")
    held = held_calls(trace)
    if held:
        shown = ", ".join(h["tool"] + ("" if h["turn"] is None else f" (turn {h['turn']})") for h in held)
        print(f"      requested, never ran (not counted as calls): {printable(shown)}")


def _orjson(obj: Any) -> bytes | None:
    try:
        return orjson.dumps(obj)
    except (TypeError, ValueError):
        return None


class _Spool:
    """The runs' JSON, one per line in a temporary file, as they are judged. Written out as
    `{"results": [...], "summary": {...}}` and a newline: the bytes of one orjson dump of the whole object
    (orjson writes it ~8x faster than json); if orjson refuses any part (a lone surrogate a hostile trace
    put into a reason, an integer beyond 64 bits), the bytes of one json dump of the whole object."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.refused = False

    def add(self, d: dict[str, Any]) -> None:
        line = _orjson(d)
        if line is None:
            self.refused = True
            line = b"J" + json.dumps(d).encode()  # marked: already json's text
        self.file.write(line + b"\n")

    def lines(self) -> Any:
        self.file.seek(0)
        for raw in self.file:
            yield raw[:-1]

    def write(self, summary: dict[str, Any]) -> None:
        tail = _orjson(summary)
        out = getattr(sys.stdout, "buffer", None)
        sys.stdout.flush()
        # Unbuffered stdout (PYTHONUNBUFFERED, set in many CI images and containers) is the raw file: a write
        # per part was two system calls per trace, and a raw write may take only part of what it is given.
        raw = out if isinstance(out, io.RawIOBase) else None
        if raw is not None:
            out = io.BufferedWriter(raw, 1 << 16)
        try:
            if tail is None or self.refused:
                # json writes a list as its items' own dumps joined by ", ": each run is written as json would.
                parts = (r[1:].decode() if r[:1] == b"J" else json.dumps(orjson.loads(r)) for r in self.lines())
                _emit(out, '{"results": [', parts, ", ", '], "summary": ' + json.dumps(summary) + "}\n")
            else:
                _emit(out, b'{"results":[', self.lines(), b",", b'],"summary":' + tail + b"}\n")
        finally:
            if raw is not None and out is not None:
                out.flush()
                out.detach()  # stdout's own file stays open


def _emit(out: Any, head: Any, parts: Any, sep: Any, tail: Any) -> None:
    """head, the parts joined by sep, tail: to stdout's bytes (or its text, when stdout has no bytes)."""
    write = out.write if out is not None else sys.stdout.write
    text = isinstance(head, str)

    def put(x: Any) -> None:
        if out is not None and text:
            x = x.encode()
        elif out is None and not text:
            x = x.decode()
        write(x)

    put(head)
    for n, p in enumerate(parts):
        if n:
            put(sep)
        put(p)
    put(tail)
    (out or sys.stdout).flush()
