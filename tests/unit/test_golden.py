"""The golden set: it loads, covers the catalogue, the default agent passes it, every fault variant fails it
through a check that names the fault, and the recorded cassettes replay."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from kit.agent.run import VARIANTS
from kit.case import Case, load_suite
from kit.checks import REGISTRY
from kit.result import CaseRun
from kit.runner import invoke
from kit.runner.agents import reference_agent

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "golden" / "cases"
CASSETTES = ROOT / "golden" / "cassettes"

# The checks through which each fault must be caught: their names say what went wrong.
FAULT_SIGNATURES = {
    "skip_lookup": r"^(guarded:issue_refund|order:lookup_order<issue_refund)$",
    "double_refund": r"^(called_at_most:issue_refund|one_refund_per_order)$",
    "over_refund": r"^refund_within_order_total$",
    "leak_pii": r"^no_pii",
    "loop": r"^no_repeat$",
    "ignore_step_cap": r"^budget$",
    "obey_injection": r"^no_injected_(email|refund)$",
    "act_before_confirm": r"^not_called:(issue_refund|update_shipping_address)@turn\d+$",
}
# ...and what the failing check's reason must mention.
FAULT_REASONS = {
    "leak_pii": r"email",
    "loop": r"lookup_order|search_kb|lookup_customer",
    "ignore_step_cap": r"steps",
}


@cache
def suite() -> tuple[Case, ...]:
    loaded = load_suite(CASES)
    assert not loaded.errors, [str(e) for e in loaded.errors]
    return tuple(loaded.cases)


def run_suite(variant: str | None = None, replay: Path | None = None) -> list[CaseRun]:
    """Every golden case once, through the runner (a conversation turn by turn for a multi-turn case)."""
    agent = reference_agent(variant=variant, replay=replay)
    return [invoke(agent, c, 0, timeout=None).case_run for c in suite()]


def describe(runs: list[CaseRun]) -> str:
    return "; ".join(f"{r.case_id}: {[(f.name, f.reason) for f in r.failures]}" for r in runs if not r.passed)


def test_golden_set_is_large_varied_and_covers_the_catalogue() -> None:
    cases = suite()
    assert len(cases) >= 40
    used = {spec.type for case in cases for spec in case.checks}
    assert used == set(REGISTRY), f"unused check types: {set(REGISTRY) - used}"
    assert all(case.invariants for case in cases)
    tags = {t for case in cases for t in case.tags}
    assert {"happy-path", "policy", "adversarial", "injection"} <= tags


def test_default_agent_passes_every_golden_case() -> None:
    runs = run_suite()
    assert all(r.passed for r in runs), describe(runs)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_fault_variant_is_caught_by_a_check_naming_it(variant: str) -> None:
    runs = run_suite(variant)
    failures = [f for r in runs for f in r.failures]
    assert failures, f"{variant} passed the whole golden suite"
    named = [f for f in failures if re.search(FAULT_SIGNATURES[variant], f.name)]
    assert named, f"{variant} failed only through {sorted({f.name for f in failures})}"
    if variant in FAULT_REASONS:
        assert any(re.search(FAULT_REASONS[variant], f.reason) for f in named), [f.reason for f in named]


def test_every_case_has_a_cassette_that_replays_to_a_pass() -> None:
    recorded = {p.stem for p in CASSETTES.glob("*.json")}
    ids = {c.id for c in suite()}
    assert ids <= recorded, f"record with python -m kit.agent.record: {sorted(ids - recorded)}"
    runs = run_suite(replay=CASSETTES)
    assert all(r.passed for r in runs), describe(runs)
