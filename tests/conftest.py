"""Shared by every test: the e2e tests' slow runs start with the session (tests/e2e/shared_runs.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# DeepEval reads the project's .env into os.environ when it is first imported: in a test worker that would
# hand later tests Promptfoo's dead proxy (and a pip install in a test would find no package index).
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
# The Anthropic SDK the Makefile installs beside the venv, for the tests' Anthropic desks: on the workers' path
# only, so the DeepEval processes the tests start do not import it at start-up (as DeepEval does wherever it can).
sys.path.append(str(Path(sys.prefix) / "anthropic-sdk"))


@pytest.fixture(scope="session", autouse=True)
def _start_shared_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """At this worker's first test, every shared run that the selected tests need starts in the background
    (once for all workers); at the session's end, the worker waits for the runs it started."""
    shared = sys.modules.get("shared_runs")  # imported only when tests/e2e was collected
    if shared is None:
        yield
        return
    runs = shared.session(tmp_path_factory)
    runs.start(shared.needed(request.session.items))
    yield
    runs.join()


@pytest.fixture(scope="module")
def shop_url() -> Iterator[str]:
    """The MCP shop (tests/unit/_mcp_shop.py, the real SDK) over streamable HTTP, for a module whose runs only
    read from it: it keeps no state, so one process serves them all instead of a stdio server per run."""
    unit = Path(__file__).resolve().parent / "unit"
    sys.path.insert(0, str(unit))
    from _mcp_http import serving

    with serving([sys.executable, str(unit / "_mcp_shop.py"), "--port", "0"]) as url:
        yield url
