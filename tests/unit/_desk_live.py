"""A desk run live through `kit run`'s invoke against a scripted model double, clean and with its planted bug
(DESK_BUG=1): the checks each run failed. The desk reads its model's address from DESK_MODEL_URL."""

from __future__ import annotations

from typing import Any

import pytest

from kit.runner import invoke
from kit.runner.agents import load_agent


def failed_checks(
    monkeypatch: pytest.MonkeyPatch, double: Any, script: Any, agent: str, case: Any, *, timeout: float
) -> dict[bool, set[str]]:
    """{bug planted: the failed checks' names}; a run that errored fails the test, naming its error."""
    failed: dict[bool, set[str]] = {}
    with double(script, host="127.0.0.2") as srv:
        monkeypatch.setenv("DESK_MODEL_URL", srv.base_url)
        for bug in (False, True):
            monkeypatch.setenv("DESK_BUG", "1" if bug else "0")
            run = invoke(load_agent(agent), case, 0, timeout=timeout)
            assert run.case_run.error is None, run.case_run.error
            failed[bug] = {r.name for r in run.case_run.results if not r.passed}
    return failed
