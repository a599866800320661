"""`kit calibrate LABELS`: how far each rubric's judge agrees with people, on answers a person labelled.

Every labelled answer goes to the configured judge through the soft gates' own rubric path (kit/judge/sampling.py),
K times (default 3); per rubric it prints n, agreement (majority of K vs the person), Cohen's kappa and
consistency (answers whose K samples all agree), with the judge model and the rubric hash. Every judge call
and the calibration itself are kept in the store, so soft gates can say how far to trust them.

Exit 0 when every rubric's kappa reaches gates.yaml `soft.min_kappa`; 1 naming each rubric under it;
2 on bad labels, no judge configured, or a judge that failed on some answer (no calibration is recorded).

`kit calibrate --export RUN > to_label.yaml` writes the answers a stored run's rubrics judged, `human:` left
empty, for a person to label.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

DEFAULT_SAMPLES = 3


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("labels", metavar="LABELS", nargs="?", help="a labels file (a YAML list of labelled answers)")
    parser.add_argument(
        "--samples", type=int, default=DEFAULT_SAMPLES, help="judge samples per answer, odd (default 3)"
    )
    parser.add_argument("--json", action="store_true", help='print {"rubrics": [...]} as JSON')
    parser.add_argument("--config", help="gate policy file with soft.min_kappa (default: the settings' gates)")
    parser.add_argument("--rubrics", help="rubrics file (default: the settings' rubrics, golden/rubrics.yaml)")
    parser.add_argument("--store", help="store file (default $KIT_STORE or .kit/evals.duckdb)")
    parser.add_argument("--export", metavar="RUN", help="write a stored run's judged answers as labels to fill in")
    parser.add_argument("--cases", help="with --export: the cases the run ran (default: the settings' cases)")


def main(args: argparse.Namespace) -> int:
    from kit.errors import KitInputError

    if args.export and args.labels:
        print("kit calibrate: give LABELS or --export RUN, not both", file=sys.stderr)
        return 2
    if not args.export and not args.labels:
        print("kit calibrate: give a labels file (or --export RUN to make one)", file=sys.stderr)
        return 2
    from kit.plan import current_plan

    try:
        plan = current_plan()
        return export(args, plan) if args.export else calibrate(args, plan)
    except KitInputError as e:
        print(f"kit calibrate: {e}", file=sys.stderr)
        return 2


def calibrate(args: argparse.Namespace, plan: Any) -> int:
    from kit.errors import KitInputError
    from kit.gate.policy import load_policy
    from kit.judge.agreement import JudgedAnswer, RubricCalibration, under_floor
    from kit.judge.agreement import calibrate as figures
    from kit.judge.labels import read_labels
    from kit.judge.rubrics import load_rubrics
    from kit.judge.sampling import JudgingError, Question, ask
    from kit.plan import child_env
    from kit.store import new_run_id, open_store
    from kit.store.values import now

    settings = plan.settings
    if args.samples < 1 or args.samples % 2 == 0:
        print(f"kit calibrate: --samples must be odd and at least 1 (a majority), got {args.samples}", file=sys.stderr)
        return 2
    if args.config and not Path(args.config).exists():
        raise KitInputError("no such gate policy file", file=args.config)
    policy = load_policy(Path(args.config) if args.config else settings.gates)
    rubrics_file = Path(args.rubrics) if args.rubrics else settings.rubrics
    if not rubrics_file.exists():
        raise KitInputError("no such rubrics file", file=str(rubrics_file))
    rubrics = load_rubrics(rubrics_file)
    labels = read_labels(args.labels, rubrics)
    for p in labels.problems:
        print(f"kit calibrate: {p}", file=sys.stderr)
    judge = plan.judge
    if judge is None:
        from kit.judge import NO_JUDGE_REASON

        print(f"kit calibrate: {NO_JUDGE_REASON}", file=sys.stderr)
        return 2
    if not labels.answers:
        print(f"kit calibrate: {labels.file}: no labelled answer to calibrate on", file=sys.stderr)
        return 2

    store = open_store(args.store or settings.store)
    calibration_id = new_run_id("calibrate")
    by_key = {a.key: a for a in labels.answers}
    questions = [Question(a.key, a.rubric.name, a.label.fields(a.rubric)) for a in labels.answers]
    judged: dict[str, list[JudgedAnswer]] = defaultdict(list)
    models: dict[str, str | None] = {}
    failures: list[str] = []
    print(
        f"kit calibrate: {len(questions)} labelled answers, {args.samples} judge samples each, {judge.describe()}",
        file=sys.stderr,
    )
    try:
        env = child_env(plan)  # the adapter judges with this very plan
        for answer in ask(questions, rubrics_file=str(rubrics_file), samples=args.samples, judge=judge, env=env):
            store.record_judge_calls(
                calibration_id, answer.key, 0, f"rubric:{answer.rubric}", answer.rubric_hash, answer.calls
            )
            judged[answer.rubric].append(JudgedAnswer(answer.key, by_key[answer.key].human, answer.samples))
            models[answer.rubric] = next((c.judge_model for c in reversed(answer.calls) if c.judge_model), None)
            if answer.outcome == "error":
                why = next((c.error for c in answer.calls if c.error), "no verdict")
                failures.append(f"{labels.file}: {answer.key}: rubric:{answer.rubric}: the judge failed: {why}")
    except JudgingError as e:
        print(f"kit calibrate: {e}", file=sys.stderr)
        return 2
    finally:
        store.merge()

    order = [r.name for r in rubrics.rubrics if r.name in judged]
    hashes = {r.name: r.hash for r in rubrics.rubrics}
    results: list[RubricCalibration] = [
        figures(name, judged[name], judge_model=models.get(name), rubric_hash=hashes[name], samples=args.samples)
        for name in order
    ]
    if args.json:
        print(json.dumps({"rubrics": [r.as_json() for r in results]}, indent=1))
    else:
        for r in results:
            print(r.line())
    for f in failures:
        print(f"kit calibrate: {f}", file=sys.stderr)
    if failures or labels.problems:
        why = "the judge failed on some answers" if failures else "the labels file has problems"
        print(
            f"kit calibrate: {why}: no calibration recorded (judge calls kept under {calibration_id})", file=sys.stderr
        )
        return 2
    stamp = now()
    store.record_calibration([_row(r, calibration_id, stamp, labels.file) for r in results])
    under = under_floor(results, policy.soft.min_kappa)
    for line in under:
        print(f"kit calibrate: {line}", file=sys.stderr)
    print(f"kit calibrate: calibration {calibration_id} recorded in {store.path}", file=sys.stderr)
    return 1 if under else 0


def _row(r: Any, calibration_id: str, stamp: str, labels_file: str) -> dict[str, Any]:
    return {
        "calibration_id": calibration_id,
        "calibrated_at": stamp,
        "rubric": r.rubric,
        "rubric_hash": r.rubric_hash,
        "judge_model": r.judge_model,
        "samples": r.samples,
        "n": r.n,
        "agreement": r.agreement,
        "kappa": r.kappa,
        "consistency": r.consistency,
        "labels_file": labels_file,
    }


def export(args: argparse.Namespace, plan: Any) -> int:
    from kit.judge.labels import export_item, skeleton
    from kit.judge.rubrics import load_rubrics
    from kit.store import open_store
    from kit.store import queries as q
    from kit.trace import parse_trace

    settings = plan.settings
    rubrics = {r.name: r for r in load_rubrics(Path(args.rubrics) if args.rubrics else settings.rubrics).rubrics}
    cases_root = Path(args.cases) if args.cases else settings.cases
    suite = plan.derive(cases=cases_root).suite  # the plan's invariants, as every front end expands them
    cases = {c.id: c for c in suite.cases}
    store = open_store(args.store or settings.store)
    with store.connect() as con:
        try:
            run_id = q.resolve_run(con, args.export)
        except q.RunNotFound as e:
            print(f"kit calibrate: --export {args.export}: {e}", file=sys.stderr)
            return 2
        rows = q.judged_answers(con, run_id)
    items: list[dict[str, Any]] = []
    left: dict[str, list[str]] = {}  # why -> the answers left out for it
    for row in rows:
        name = row["check"].removeprefix("rubric:")
        case, rubric = cases.get(row["case_id"]), rubrics.get(name)
        why = _left_out(case, rubric, row["trace"], cases_root)
        if why is not None:
            left.setdefault(why, []).append(f"{row['case_id']}@{row['attempt']}:{name}")
            continue
        trace = parse_trace(json.loads(row["trace"]) if isinstance(row["trace"], str) else row["trace"])
        items.append(export_item(row["case_id"], row["attempt"], rubric, case, trace))
    for why, keys in left.items():
        shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        print(f"kit calibrate: --export {run_id}: left out {len(keys)} answers, {why}: {shown}", file=sys.stderr)
    if not items:
        print(
            f"kit calibrate: --export {run_id}: no judged answer to label (did a judge run the rubrics?)",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(skeleton(items))
    print(f"kit calibrate: {len(items)} answers of run {run_id} to label", file=sys.stderr)
    return 0


def _left_out(case: Any, rubric: Any, trace: Any, cases_root: Path) -> str | None:
    """Why a judged answer cannot become a label (None when it can)."""
    if case is None:
        return f"their cases are not in {cases_root}"
    if rubric is None:
        return "their rubrics are no longer in the rubrics file"
    if trace is None:
        return "no trace was stored"
    if getattr(case, "is_multi_turn", False):
        return "conversations (labels hold single answers)"
    return None
