"""`kit serve`: production traces judged as they arrive (OTLP/HTTP on /v1/traces, protobuf and JSON).

    kit serve [--port 4318] [--invariants FILE] [--invariant NAME ...] [--checks FILE] [--settle 2s]
              [--rubrics FILE [--judge-sample RATE]] [--store FILE] [--wal DIR] [--name NAME]

Every trace is held to every invariant of the suite's invariants file (or the ones named) and the case-free
checks of `--checks`; verdicts go to the store as source `production` (tables `production_traces`,
`production_checks`). `--rubrics`: soft rubrics judge a sample of the complete traces (by trace id) with the
configured judge, on a thread of their own, stored as checks `rubric:<name>`. A batch is acknowledged once it
is in the write-ahead log (`--wal`, default beside the store); a restart judges what the last run acknowledged
and had not stored. SIGTERM or Ctrl-C: new batches are refused (503, Retry-After), complete traces are judged
and stored, and the command exits 0.
"""

from __future__ import annotations

import argparse
import gc
import re
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kit.errors import KitInputError

if TYPE_CHECKING:
    from kit.receiver.soft import SoftJudge
    from kit.settings import Settings
    from kit.store import Store

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")


def duration(text: str) -> float:
    """`2s`, `500ms`, `1m` or a number of seconds."""
    m = _DURATION.match(text)
    if m is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (say 2s, 500ms or 1m)")
    return float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}[m.group(2)]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=4318, help="port (default 4318, OTLP/HTTP's; 0: any free one)")
    parser.add_argument("--invariants", metavar="FILE", help="invariants file (default: the settings', else the "
                        "nearest invariants.yaml to the cases)")  # fmt: skip
    parser.add_argument("--invariant", action="append", metavar="NAME", help="judge by this bundle only "
                        "(repeatable; default: every bundle of the file)")  # fmt: skip
    parser.add_argument("--checks", metavar="FILE", help="a YAML list of case-free checks to judge every trace by too")
    parser.add_argument("--settle", type=duration, default=2.0, metavar="TIME", help="wait this long after a "
                        "trace's last span (its root come) before judging it (default 2s)")  # fmt: skip
    parser.add_argument("--max-wait", type=duration, default=300.0, metavar="TIME", help="judge a trace whose "
                        "root never came this long after its first span, as incomplete (default 5m)")  # fmt: skip
    parser.add_argument("--max-spans", type=int, default=50_000, metavar="N", help="spans held in memory before "
                        "batches are refused with 429 and Retry-After (default 50000)")  # fmt: skip
    parser.add_argument("--rubrics", metavar="FILE", help="soft rubrics (as golden/rubrics.yaml) to judge a sample "
                        "of the complete traces by, with the configured judge, off the ingest path")  # fmt: skip
    parser.add_argument("--judge-sample", type=float, metavar="RATE", help="the share of complete traces the "
                        "rubrics judge, by trace id (0 < RATE <= 1; default 1 with --rubrics)")  # fmt: skip
    parser.add_argument("--store", metavar="FILE", help="store file (default: the settings'); one per receiver")
    parser.add_argument("--wal", metavar="DIR", help="write-ahead log folder (default: <store>.serve-wal)")
    parser.add_argument("--name", help="this receiver's name in the store (default: host:port)")
    parser.add_argument("--merge", nargs="+", metavar="SHARD", help="serve nothing: copy the production traces "
                        "(and runs) of these receivers' stores into --store, each trace once, and exit")  # fmt: skip


def main(args: argparse.Namespace) -> int:
    from kit.plan import suite_invariants
    from kit.settings import load_settings
    from kit.store import open_store

    if args.max_spans < 1:
        raise KitInputError(f"--max-spans must be at least 1, got {args.max_spans}")
    if args.settle > 3600 or args.max_wait > 86400:
        raise KitInputError("--settle is at most 1h and --max-wait at most a day")
    overrides = {k: v for k, v in (("invariants", args.invariants), ("store", args.store)) if v}
    settings = load_settings(overrides, flags={"invariants": "--invariants", "store": "--store"})
    invariants = suite_invariants(settings)
    if args.invariants is None and invariants is None and args.checks is None:
        raise KitInputError("no invariants file found: give --invariants FILE or --checks FILE")
    if invariants is not None and not Path(invariants).is_file():
        raise KitInputError("no such invariants file", file=str(invariants))
    if args.merge:
        return merge(open_store(settings.store), [Path(p) for p in args.merge])
    checks = Path(args.checks) if args.checks else None
    if checks is not None and not checks.is_file():
        raise KitInputError("no such checks file", file=str(checks))
    return serve(args, invariants, checks, open_store(settings.store), _soft(args, settings))


def _soft(args: argparse.Namespace, settings: Settings) -> SoftJudge | None:
    """The soft rubrics' judge: the plan's (`Plan.judge`, [tool.kit.judge] or KIT_JUDGE_*), asked over an
    OpenAI-compatible endpoint; no judge configured: every sampled trace's rubrics are `skipped`, saying so."""
    from kit.judge import NO_JUDGE_REASON, OPENAI_COMPATIBLE
    from kit.judge.rubrics import load_rubrics
    from kit.plan import make_plan
    from kit.receiver.soft import SoftJudge

    if args.rubrics is None:
        if args.judge_sample is not None:
            raise KitInputError("--judge-sample samples traces for the soft rubrics: give --rubrics FILE")
        return None
    rate = 1.0 if args.judge_sample is None else args.judge_sample
    if not 0 < rate <= 1:
        raise KitInputError(f"--judge-sample is a share of the traces, 0 < RATE <= 1, got {rate}")
    if not Path(args.rubrics).is_file():
        raise KitInputError("no such rubrics file", file=args.rubrics)
    rubrics = load_rubrics(args.rubrics).rubrics
    if not rubrics:
        raise KitInputError("no rubric in the file", file=args.rubrics)
    judge = make_plan(settings, defer_agent=True).judge
    if judge is not None and (judge.provider != OPENAI_COMPATIBLE or judge.base_url is None):
        raise KitInputError(
            f"kit serve asks its judge over an OpenAI-compatible endpoint; the judge is provider {judge.provider!r} "
            "(set KIT_JUDGE_BASE_URL, and KIT_JUDGE_PROVIDER=openai-compatible)"
        )
    return SoftJudge(rubrics, judge, rate, NO_JUDGE_REASON)


# Judging makes many short-lived objects and hardly a reference cycle: reference counting frees them. The cyclic
# collector, run every 700 allocations as by default, walked the spans held (up to --max-spans) and every module's
# objects again and again: a ninth of the receiver's CPU. What the modules made at start is left out of every
# collection (gc.freeze) and a collection comes every 20,000 allocations, so a cycle is still collected and
# memory stays bounded (kit check turns the collector off: it ends; a receiver does not).
GC_THRESHOLD = (20_000, 20, 100)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _quiet_collector() -> None:
    import kit.evaluate
    import kit.importers.semconv
    import kit.receiver.decode
    import kit.store.production  # noqa: F401 - loaded now, so that what they make at import is frozen

    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def merge(store: Store, shards: list[Path]) -> int:
    """Receivers' store shards into one store (`kit.store.merge.import_runs`: a trace id already there is kept
    as it is, so merging twice adds nothing)."""
    from kit.store import production
    from kit.store.merge import import_runs

    for shard in shards:
        if not shard.is_file():
            raise KitInputError("no such store", file=str(shard))
        if shard.resolve() == store.path.resolve():
            raise KitInputError("is the store merged into (--store)", file=str(shard))
    import duckdb

    for shard in shards:
        try:
            import_runs(store, shard)
        except duckdb.Error as e:
            raise KitInputError(f"not a store that can be merged: {str(e).splitlines()[0]}", file=str(shard)) from None
    with store.connect() as con:
        total = production.summary(con)["traces"]
    print(f"kit serve: {len(shards)} shard(s) merged into {store.path}: {total} production traces")
    return 0


def serve(
    args: argparse.Namespace, invariants: Path | None, checks: Path | None, store: Store, soft: SoftJudge | None = None
) -> int:
    from kit.receiver.http import Front
    from kit.receiver.judging import production_case
    from kit.receiver.service import Options, Receiver

    production = production_case(invariants, args.invariant, checks)
    wal = Path(args.wal) if args.wal else store.path.with_name(store.path.name + ".serve-wal")
    options = Options(
        wal=wal,
        name=args.name or f"{args.host}:{args.port}",
        settle=args.settle,
        max_wait=args.max_wait,
        max_spans=args.max_spans,
    )
    for line in production.left_out:
        print(f"kit serve: not run on production traces: {line}", file=sys.stderr)
    if soft is not None:
        names = ", ".join(r.name for r in soft.rubrics)
        who = f"judge {soft.judge.model} at {soft.judge.base_url}" if soft.judge else f"skipped: {soft.why}"
        print(f"kit serve: soft rubrics {names} on {soft.rate:.0%} of complete traces; {who}", file=sys.stderr)
    _quiet_collector()
    # Blocked before the receiver's first thread starts, so that every thread inherits the mask: the kernel keeps a
    # stop signal for the main thread, whose wait below takes it at once however busy the other threads are.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        receiver = Receiver(production, store, options, soft)
        receiver.start()
        try:
            front = Front(receiver, args.host, args.port)
        except OSError as e:
            receiver.stop(timeout=0)
            raise KitInputError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
        stopping: list[int] = []  # the signal that came: set by its handler, read by the loop below

        def _stop(signum: int, frame: object) -> None:
            stopping.append(signum)  # nothing that takes a lock: the handler may run while the main thread holds one

        for sig in STOP_SIGNALS:
            signal.signal(sig, _stop)
        front.start()
        if args.name is None:
            options.name = f"{args.host}:{front.port}"
        print(
            f"kit serve: listening on http://{args.host}:{front.port}/v1/traces; {len(production.labels)} checks; "
            f"store {store.path}; log {wal}" + (f"; {receiver.replayed} traces from the log to judge"
                                                if receiver.replayed else ""),
            flush=True,
        )  # fmt: skip
        # The wait also wakes to look at `stopping`: a thread started before the mask (a library's) may still be handed
        # the signal, and Python runs the handler only once the main thread runs again.
        while not stopping:
            taken = signal.sigtimedwait(STOP_SIGNALS, 0.2)
            if taken is not None:
                stopping.append(taken.si_signo)
        receiver.stop()  # first: a request still arriving is refused (503), never taken and lost
        front.close()
        s = receiver.status()
        print(
            f"kit serve: stopped: {s['judged']} traces judged ({s['failed']} failed), {s['pending_traces']} without "
            f"their root kept in the log, {s['refused']} batches refused, {s['bad']} malformed",
            flush=True,
        )
        return 0
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
