"""Plan documents go to `<the store's folder>/plans/`, beside whatever a team keeps there: pruning removes only
the kit's own old documents (its names), never a team's file, however old."""

from __future__ import annotations

import os
import time
from pathlib import Path

from kit.plan import PLAN_ENV, make_plan
from kit.settings import load_settings


def test_pruning_plan_documents_leaves_the_teams_files(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.kit]\nstore = "{tmp_path / "evals.duckdb"}"\n')
    plans = tmp_path / "plans"
    plans.mkdir()
    week_ago = time.time() - 8 * 24 * 3600
    theirs = [plans / "budget.json", plans / "0123456789abcdef0123.json"]
    for f in theirs:
        f.write_text("{}")
        os.utime(f, (week_ago, week_ago))
    plan = make_plan(load_settings(root=tmp_path))
    mine = Path(plan.env()[PLAN_ENV])
    assert mine.parent == plans and mine.name.startswith("kit-plan-")
    os.utime(mine, (week_ago, week_ago))
    plan.derive(evals_id="evals-2").env()  # another document: the unused one of the kit's is pruned
    assert not mine.exists()
    assert all(f.exists() for f in theirs)
