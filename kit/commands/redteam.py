"""`kit redteam keep RUN`: the conversations that broke an invariant in an adaptive red-team run, kept as static
attacks in your attacks file, so they replay next time with no attacker: free, offline and deterministic.

    kit redteam keep latest [--attacks redteam/attacks.yaml] [--store FILE]

Each attack of RUN (a Promptfoo red-team run in the store) that an adaptive strategy won carries, in the
run's results file, every conversation of it that broke a check with its user turns (conversation_assert.cjs
puts them there from the red-team target's ledger, which the eval then removes). A conversation that broke a
check is kept up to the turn it first broke it in, as one attack of category `kept`: `{"turns": [...]}`, with the
invariant and check it broke, which the red team replays turn by turn on one fresh agent, judged by the suite's
invariants as every attack is (an error when nothing judging the red team names its invariant any more). A
conversation already in the file is not added twice. The file's own lines and comments stay as they are: each
kept attack is one line appended to its `attacks:`.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import yaml

from kit import yamlio
from kit.errors import KitInputError

CATEGORY = "kept"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    keep = sub.add_parser("keep", help="keep the conversations that broke an invariant as static attacks")
    keep.add_argument("run", nargs="?", default="latest", help="a red-team run in the store (default: latest)")
    keep.add_argument("--attacks", type=Path, help="the attacks file to add to (default: [tool.kit.redteam] corpus)")
    keep.add_argument("--store", help="the store (default: the settings')")


def _results_file(store: Any, ref: str) -> tuple[str, Path]:
    from kit.store import queries as q

    with store.connect() as con:
        try:
            run_id = q.resolve_run(con, ref, source="promptfoo", kind="redteam")
        except q.RunNotFound as e:
            raise KitInputError(
                f"{e}: `kit redteam keep` needs a Promptfoo red-team run", file=str(store.path)
            ) from None
        row = con.execute("SELECT meta FROM runs WHERE run_id = ?", [run_id]).fetchone()
    meta = json.loads(row[0]) if row and row[0] else {}
    if not meta.get("file"):
        raise KitInputError(f"run {run_id} names no Promptfoo results file: it was not a Promptfoo red team")
    path = Path(meta["file"])
    if not path.is_file():
        raise KitInputError(f"run {run_id}: its results file is gone", file=str(path))
    return run_id, path


def _conversations(r: dict[str, Any], attack: str, folder: Path, results: Path) -> list[tuple[str, Any]]:
    """(where, entry) per conversation of one attack: the broken ones its result carries (`metadata.kit.broken`,
    written by conversation_assert.cjs, so they outlive the ledger folder the eval removes), else the
    entries of its ledger folder while it is still there."""
    kit = ((r.get("response") or {}).get("metadata") or {}).get("kit")
    if isinstance(kit, dict) and isinstance(kit.get("broken"), list):
        return [(f"{results}: {attack}", entry) for entry in kit["broken"]]
    if not folder.is_dir():
        raise KitInputError(f"attack {attack}: its conversations are gone", file=str(folder))
    out: list[tuple[str, Any]] = []
    for f in sorted([*folder.glob("*.json"), *folder.glob("repeat-*/*.json")]):
        try:
            out.append((str(f), json.loads(f.read_text(encoding="utf-8"))))
        except (OSError, ValueError) as e:
            raise KitInputError(f"not a conversation of the red-team target: {e}", file=str(f)) from None
    return out


def broken_conversations(results: Path) -> list[dict[str, Any]]:
    """Per adaptive attack that failed: each conversation of its ledger that broke a check, cut after the turn
    it first broke one in (`{"attack", "session", "check", "turn", "turns"}`)."""
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
        rows = data["results"]["results"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise KitInputError(f"not a Promptfoo results file: {e}", file=str(results)) from None
    out: list[dict[str, Any]] = []
    for r in rows:
        vars_ = (r.get("testCase") or {}).get("vars") or {}
        ledger = vars_.get("kit_ledger")
        if not ledger or r.get("success"):
            continue
        attack = ((r.get("testCase") or {}).get("metadata") or {}).get("case_id") or "attack"
        for where, entry in _conversations(r, attack, Path(ledger), results):
            try:
                failed = sorted((entry.get("first_failed") or {}).items(), key=lambda kv: int(kv[1]))
                session = str(entry["session"])
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise KitInputError(f"not a conversation of the red-team target: {e}", file=where) from None
            if not failed:
                continue
            check, turn = failed[0]
            users = list(entry.get("users") or [])[: turn + 1]
            invariants = entry.get("invariants") if isinstance(entry.get("invariants"), dict) else {}
            found = {"attack": attack, "session": session, "check": check, "turn": turn, "turns": users}
            out.append({**found, "invariant": invariants.get(check)})
    return out


def _attack_id(found: dict[str, Any], ids: set[str]) -> str:
    """`kept-<goal>-<n>`: short and plain (Promptfoo redacts long ids that look like keys in its results)."""
    parts = str(found["attack"]).split("/")
    goal = parts[1] if len(parts) > 1 else parts[0]
    slug = re.sub(r"[^a-z0-9]+", "-", goal.removeprefix("goal-").lower()).strip("-")[:40]
    n = 1
    while f"kept-{slug}-{n}" in ids:
        n += 1
    return f"kept-{slug}-{n}"


def keep(attacks: Path, found: list[dict[str, Any]]) -> list[str]:
    """Append each conversation to `attacks` as a `kept` attack (one JSON line: valid YAML); the ids added."""
    text = attacks.read_text(encoding="utf-8") if attacks.exists() else "attacks:\n"
    try:
        data = yamlio.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise KitInputError(f"not valid YAML: {e}", file=str(attacks)) from None
    if not isinstance(data, dict) or not isinstance(data.get("attacks") or [], list):  # `attacks:` alone: none yet
        raise KitInputError("expected `attacks:`, a list of {id, category, text}", file=str(attacks))
    have = {str(a.get("text")) for a in data.get("attacks") or [] if isinstance(a, dict)}
    ids = {str(a.get("id")) for a in data.get("attacks") or [] if isinstance(a, dict)}
    lines: list[str] = []
    added: list[str] = []
    from kit.store.ingest.promptfoo import escape_surrogates

    for f in found:
        # A lone surrogate (JavaScript strings may hold one) is kept as its escape: UTF-8 cannot hold it.
        prompt = json.dumps({"turns": escape_surrogates(f["turns"])}, ensure_ascii=False)
        if prompt in have:
            continue
        attack_id = _attack_id(f, ids)
        have.add(prompt)
        ids.add(attack_id)
        entry = {"id": attack_id, "category": CATEGORY, "text": prompt}
        if f.get("invariant"):  # its replay is judged by what it broke (kit_promptfoo/redteam/target.py)
            entry |= {"invariant": str(f["invariant"]), "check": str(f["check"])}
        lines.append(f"  # {f['attack']}: {f['check']} broken in turn {f['turn'] + 1}\n  - {json.dumps(entry)}\n")
        added.append(attack_id)
    if not added:
        return []
    new = text + ("" if text.endswith("\n") else "\n") + "".join(lines)
    try:
        kept = (yamlio.safe_load(new) or {}).get("attacks") or []
    except yaml.YAMLError:
        kept = []
    if [a.get("id") for a in kept[-len(added) :] if isinstance(a, dict)] != added:
        raise KitInputError("the kept attacks would not land in `attacks:` (is it the last key?)", file=str(attacks))
    attacks.write_text(new, encoding="utf-8")
    return added


def no_link_out(attacks: Path, root: Path) -> Path:
    """`attacks`, refused (KitInputError naming it) when it, or a folder on its way from the repository's root,
    is a link out of the repository: `kit redteam keep` writes the team's own file, never through a link."""
    real_root = root.resolve()
    path = attacks if attacks.is_absolute() else Path.cwd() / attacks
    try:
        steps = [root / Path(*path.relative_to(root).parts[: i + 1]) for i in range(len(path.relative_to(root).parts))]
    except ValueError:  # a file named outside the repository: only a link of its own is followed
        steps = [path]
    for step in steps:
        if step.is_symlink() and not step.resolve().is_relative_to(real_root):
            raise KitInputError(
                f"is a link out of the repository (to {step.resolve()}): kit redteam keep writes inside it only",
                file=str(attacks),
            )
    return path


def main(args: argparse.Namespace) -> int:
    from kit.plan import current_plan, generic_corpus
    from kit.store import open_store

    plan = current_plan()
    if args.store:
        plan = plan.derive(store=Path(args.store))
    attacks = args.attacks or plan.redteam_corpus
    if args.attacks is None and attacks.resolve() == generic_corpus().resolve():
        raise KitInputError("the kit's generic attacks are not yours to extend: name your file with --attacks")
    store_path = Path(plan.store)
    if not store_path.is_file():
        raise KitInputError("no such store: run the red team first (`make evals`)", file=str(store_path))
    run_id, results = _results_file(open_store(store_path), args.run)
    found = broken_conversations(results)
    if not found:
        print(f"kit redteam keep: run {run_id} holds no conversation that broke an invariant: nothing to keep")
        return 0
    added = keep(no_link_out(attacks, plan.root), found)
    for f in found:
        broke = f"{f['invariant']}: {f['check']}" if f.get("invariant") else f["check"]
        print(f"  {f['attack']}: {broke} broken in turn {f['turn'] + 1} of {len(f['turns'])} kept")
    there = len(found) - len(added)
    print(
        f"kit redteam keep: {len(added)} conversations added to {attacks} (category {CATEGORY}), {there} already there"
    )
    if added:
        print("  they replay as static attacks next time: `make evals`, or `kit init --check` for the root config")
    return 0
