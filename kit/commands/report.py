"""`kit report [--run REF] [--html FILE] [--compare A B] [--md FILE]`: a run's results from the store as
text, and one self-contained HTML page of every source of that `make evals` (or of two runs side by side)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kit.commands.gate import GateResult
    from kit.report.verdict_view import MergeVerdict, RunVerdict

SOURCES = ("kit", "deepeval", "promptfoo")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", default="latest", help="run id (or prefix), latest, previous, git sha or model id")
    parser.add_argument("--source", choices=SOURCES, help="only runs from this source")
    parser.add_argument("--k", type=int, default=2, help="k for the per-case pass^k column (default 2)")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report to FILE")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help="put two runs side by side (run ids, git shas or model ids); default: the run and its baseline",
    )
    parser.add_argument("--md", metavar="FILE", help="write the side-by-side comparison as Markdown (a PR comment)")
    parser.add_argument(
        "--runs", nargs="+", metavar="ID", help="the runs the page holds (default: the run and the latest run of "
        "every other source and agent recorded within an hour of it)"
    )  # fmt: skip
    parser.add_argument("--cases", help="case file or folder to read tags from (default: the settings' cases)")
    parser.add_argument("--recent", type=int, default=20, help="how many runs each HTML trend shows")
    parser.add_argument("--store", help="store file (default $KIT_STORE or .kit/evals.duckdb)")
    parser.add_argument("--production", action="store_true", help="only the production section: traces kit serve "
                        "judged, pass rate per invariant over time and the failing traces")  # fmt: skip


@dataclass(frozen=True)
class ReportRequest:
    """What `kit report` makes, for a caller that is not the command line (`make evals`)."""

    store: Path | str  # the store file (the command line's --store, else the settings')
    run: str = "latest"
    source: str | None = None
    k: int = 2
    html: Path | None = None
    compare: tuple[str, str] | None = None
    md: Path | None = None
    runs: tuple[str, ...] | None = None  # the runs the page holds
    cases: Path | None = None  # where the HTML report reads tags from (None: no tags)
    recent: int = 20
    text: bool = True  # the text report (make evals prints its own summary instead)
    production: bool = False  # only the production section (the traces kit serve judged)
    gates: Path | None = None  # the policy whose alpha the side by side uses, over the one the later run recorded
    settings_gates: Path | None = None  # the settings' policy: its alpha for a run that recorded none
    verdict: MergeVerdict | None = None  # the gate's, judged already (make evals); else the report asks the gate


@dataclass(frozen=True)
class Report:
    text: str | None  # the text report (or the comparison), when asked for
    html: Path | None  # the HTML page written
    md: Path | None  # the Markdown comparison written
    notes: tuple[str, ...] = ()  # what was asked and not written, and why


def _resolve_pair(con, a: str, b: str, source: str | None) -> tuple[str, str]:
    """Both sides of a comparison from one source: B (the later) decides it when none is given, since a git
    sha or model id matches the runs of every source."""
    from kit.store import queries as q

    rb = q.resolve_run(con, b, source)
    src = source or q.run_info(con, rb)["source"]
    return q.resolve_run(con, a, src), q.resolve_run(con, b, src)


def _choose(con, req: ReportRequest) -> tuple[list[str], tuple[str, str] | None]:
    """The runs the page holds, and the two put side by side: --compare's, else the run and its baseline."""
    from kit.report import page_data as pd
    from kit.store import queries as q

    if req.compare:
        pair = _resolve_pair(con, *req.compare, req.source)
        return ([q.resolve_run(con, r) for r in req.runs] if req.runs else list(dict.fromkeys(pair))), pair
    run_id = q.resolve_run(con, req.run, req.source)
    base = q.baseline_run(con, run_id)
    runs = [q.resolve_run(con, r) for r in req.runs] if req.runs else pd.batch(con, run_id)
    return runs, ((base, run_id) if base else None)


def _tags(req: ReportRequest) -> dict[str, list[str]]:
    from kit.report.page_data import case_tags

    return case_tags(req.cases) if req.cases is not None and Path(req.cases).exists() else {}


def main(args: argparse.Namespace) -> int:
    from kit.errors import KitInputError
    from kit.names import terminal
    from kit.settings import load_settings

    try:
        settings = load_settings()
    except KitInputError as e:
        print(f"kit report: {e}", file=sys.stderr)
        return 2
    request = ReportRequest(
        store=args.store or settings.store,
        run=args.run,
        source=args.source,
        k=args.k,
        html=Path(args.html) if args.html else None,
        compare=tuple(args.compare) if args.compare else None,
        md=Path(args.md) if args.md else None,
        runs=tuple(args.runs) if args.runs else None,
        cases=Path(args.cases) if args.cases else settings.cases,
        recent=args.recent,
        production=args.production,
        settings_gates=settings.gates,
    )
    try:
        done = report(request)
    except KitInputError as e:
        print(f"kit report: {e}", file=sys.stderr)
        return 2
    print(terminal(done.text))  # nothing from a trace reaches the terminal raw
    if done.html is not None:
        print(f"\nHTML report written to {done.html}")
    for note in done.notes:
        print(terminal(f"kit report: {note}"), file=sys.stderr)
    if done.md is not None:
        print(f"Markdown comparison written to {done.md}")
    return 0


def _recorded_alpha(con: Any, run_id: str, alpha: float) -> float:
    """The alpha of the gate policy the later run recorded (kit.gate.rules), else `alpha`."""
    from kit.gate.rules import RunRules
    from kit.store import queries as q

    rules = RunRules.from_json(q.run_rules_json(con, run_id))
    return rules.policy.baseline.alpha if rules is not None else alpha


def report(req: ReportRequest) -> Report:
    """The report the request asks for: the text (unless `text` is off), the HTML page and the Markdown
    comparison written where it says. Bad input (no store, a store a newer kit wrote, no such run, a bad gate
    policy) is a KitInputError naming it."""
    from kit.errors import KitInputError
    from kit.gate.policy import GatePolicy, load_policy
    from kit.report import compare_view, html, text, verdict_view
    from kit.report import page_data as pd
    from kit.report.data import gather
    from kit.store import open_store
    from kit.store import queries as q

    if req.k < 1:
        raise KitInputError("--k must be at least 1")
    # The side by side's verdicts are the gate's: its alpha.
    wanted = req.html or req.md or req.compare
    policy_file = req.gates or req.settings_gates
    alpha = load_policy(policy_file).baseline.alpha if wanted and policy_file else GatePolicy().baseline.alpha
    store = open_store(req.store)
    if not store.path.exists() and not store.spool.exists():
        raise KitInputError(f"no store at {store.path} (run the evals first, or set KIT_STORE)")
    if req.production or (req.text and not wanted and req.run == "latest" and _production_only(store)):
        return Report(_production(store) or "no production traces in the store (kit serve writes them)", None, None)
    tags = _tags(req) if req.html else {}
    page = side = None
    shown: str | None = None
    run_ids: list[str] = []
    pair: tuple[str, str] | None = None
    try:
        with store.connect() as con:
            if req.html or req.md or req.compare:
                run_ids, pair = _choose(con, req)
            gated = _gated(con, req, run_ids, pair, _error_share(policy_file))
        # The report opens with the gate's verdict (a session of its own: the gate opens the store itself).
        verdict = req.verdict or (merge_verdict(store, gated, policy_file, req.cases) if gated else None)
        with store.connect() as con:
            if pair:
                alpha = _recorded_alpha(con, pair[1], alpha) if not req.gates else alpha
                under = verdict.under_floor(pair[1]) if verdict else {}
                side = pd.side_by_side(con, *pair, k=req.k, alpha=alpha, under_floor=under)
            if req.html:
                page = html.render(
                    html.gather(con, run_ids, k=req.k, side=side, tags=tags, recent=req.recent, verdict=verdict)
                )
            if req.compare and req.text and pair:
                cmp = q.compare(con, *pair)
                shown = text.render_comparison(cmp, q.run_info(con, pair[0]), q.run_info(con, pair[1]))
        if not req.compare and req.text:  # a store session of its own, after the one above has let the lock go
            shown = text.render(gather(store, req.run, k=req.k, source=req.source, recent=req.recent))
        if shown is not None and verdict is not None:
            shown = f"{verdict_view.text(verdict)}\n\n{shown}"
    except q.RunNotFound as e:
        raise KitInputError(f"{store.path}: {e}") from None
    if shown is not None and not req.compare:  # the production section under the run's, when there is one
        section = _production(store)
        shown = f"{shown}\n\n{section}" if section else shown
    notes: list[str] = []
    if page is not None and req.html is not None:
        _write(req.html, page)
    md = None
    if req.md:
        if side is None:
            notes.append(f"no baseline to compare with; {req.md} not written")
        else:
            md = _write(req.md, compare_view.markdown(side, verdict=verdict))
    return Report(shown, req.html if page is not None else None, md, tuple(notes))


def _gated(
    con: Any, req: ReportRequest, run_ids: list[str], pair: tuple[str, str] | None, share: float
) -> list[tuple[str, str | None]]:
    """The runs whose gate the report opens with, each with the baseline it is held against: the page's
    runs that are not controls (as `make evals` gates them), else the side by side's B against its A, else
    the run reported. A run's baseline: A for the side by side's B, else `queries.baseline_run` (what
    `make evals` holds it against, never an outage by `share`: the policy's baseline.max_error_share)."""
    from kit.store import queries as q

    if req.html:
        chosen = run_ids
    elif pair:
        chosen = [pair[1]]
    else:
        chosen = [q.resolve_run(con, req.run, req.source)]
    # A red-team control must fail, and is never gated: no verdict on it.
    chosen = [r for r in chosen if not q.is_control(q.run_info(con, r))]
    return [(r, pair[0] if pair and r == pair[1] else q.baseline_run(con, r, share)) for r in chosen]


def merge_verdict(
    store: Any, gated: list[tuple[str, str | None]], policy_file: Path | None, cases: Path | None
) -> MergeVerdict:
    """The gate's verdict on these runs (each with its baseline): kit.commands.gate.gate_run, what `kit gate`
    prints and `make evals` exits on, gathered for the head of a report (kit.report.verdict_view). A run the
    gate cannot judge (a policy it cannot read, a run gone) is named with why: the change may not merge."""
    from kit.commands.gate import case_floors, gate_run
    from kit.errors import KitInputError
    from kit.gate.policy import GatePolicy, load_policy
    from kit.report.verdict_view import MergeVerdict
    from kit.store import queries as q

    try:
        policy = load_policy(policy_file) if policy_file else GatePolicy()
        floors = case_floors(Path(cases))[0] if cases is not None else {}
    except KitInputError as e:
        return MergeVerdict((), (f"the gate could not read its rules: {e}",))
    runs, unjudged = [], []
    for run_id, baseline in gated:
        try:
            result = gate_run(store, run_id, policy, floors, baseline=baseline)
        except (q.RunNotFound, KitInputError) as e:
            unjudged.append(f"gate could not judge run {run_id}: {e}")
            continue
        runs.append(run_verdict(result))
    return MergeVerdict(tuple(runs), tuple(unjudged))


def run_verdict(result: GateResult) -> RunVerdict:
    """A gate result (kit.commands.gate.GateResult) as the report shows it."""
    from kit.report.verdict_view import RunVerdict

    agent = result.run.get("agent")
    return RunVerdict(
        run_id=str(result.run["run_id"]),
        source=str(result.run["source"]),
        agent=agent,
        headline=result.headline + (f" [{agent}]" if agent else ""),
        problems=result.problems,
        context=result.context,
        under_floor=result.under_floor,
    )


def _error_share(policy_file: Path | None) -> float:
    """The policy's baseline.max_error_share (the default when it cannot be read: the verdict says why)."""
    from kit.errors import KitInputError
    from kit.gate.policy import GatePolicy, load_policy

    try:
        return (load_policy(policy_file) if policy_file else GatePolicy()).baseline.max_error_share
    except KitInputError:
        return GatePolicy().baseline.max_error_share


def _production(store: Any) -> str:
    """The production section (the traces kit serve judged), or "" when there are none."""
    from kit.report import production_view

    with store.connect() as con:
        return production_view.render(con)


def _production_only(store: Any) -> bool:
    """A store of production traces and no run (a receiver's own store): its report is the production section."""
    if not store.path.exists():
        return False
    with store.connect() as con:
        row = con.execute("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM production_traces)").fetchone()
    return bool(row and row[0] == 0 and row[1])


def _write(path: Path, content: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return path
