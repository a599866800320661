"""How `make evals` runs its stages: the tools' stages at the same time, each step's output in its own log."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

from kit.pipeline import Stage, Step, run_stages

# A step that says it started, then waits for the others to start: it passes only when all ran at once.
RENDEZVOUS = """
import pathlib, sys, time
here = pathlib.Path(sys.argv[1]); here.mkdir(exist_ok=True)
(here / sys.argv[2]).touch()
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    if len(list(here.iterdir())) >= int(sys.argv[3]):
        sys.exit(0)
    time.sleep(0.05)
sys.exit(1)
"""


def _rendezvous(name: str, folder: Path, n: int) -> Step:
    return Step(name, (sys.executable, "-c", RENDEZVOUS, str(folder), name, str(n)))


def test_together_stages_run_at_the_same_time_and_results_keep_their_order(tmp_path):
    meet = tmp_path / "meet"
    chosen = [Stage(name, f"stage {name}", (_rendezvous(name, meet, 3),), together=True) for name in ("a", "b", "c")]
    results = run_stages(chosen, {"PATH": "/usr/bin:/bin"}, tmp_path)
    assert [r.stage.name for r in results] == ["a", "b", "c"]
    assert [r.code for r in results] == [0, 0, 0], [r.log.read_text() for r in results]


def test_other_stages_run_first_one_at_a_time(tmp_path):
    order: list[str] = []
    running = threading.Event()

    def alone(name: str):
        def call() -> int:
            assert not running.is_set()
            running.set()
            time.sleep(0.05)
            order.append(name)
            running.clear()
            return 0

        return call

    def after() -> int:
        order.append("together")
        return 0 if order[:2] == ["lint", "kit"] else 1

    chosen = [
        Stage("together", "t", (Step("t", call=after),), together=True),
        Stage("lint", "l", (Step("l", call=alone("lint")),)),
        Stage("kit", "k", (Step("k", call=alone("kit")),)),
    ]
    results = run_stages(chosen, {}, tmp_path)
    assert [r.code for r in results] == [0, 0, 0]
    assert order == ["lint", "kit", "together"]


def test_in_process_steps_of_stages_running_together_print_into_their_own_logs(tmp_path, capsys):
    both = threading.Barrier(2, timeout=10)

    def talk(word: str):
        def call() -> int:
            both.wait()  # both steps print at the same time
            for i in range(200):
                print(f"{word} {i}")
                print(f"{word} err {i}", file=sys.stderr)
            return 0

        return call

    chosen = [Stage(w, w, (Step(w, call=talk(w)),), together=True) for w in ("alpha", "beta")]
    results = run_stages(chosen, {}, tmp_path)
    assert [r.code for r in results] == [0, 0]
    alpha = (tmp_path / "alpha.log").read_text()
    beta = (tmp_path / "beta.log").read_text()
    assert len(re.findall(r"(?m)^alpha (err )?\d+$", alpha)) == 400 and "beta" not in alpha
    assert len(re.findall(r"(?m)^beta (err )?\d+$", beta)) == 400 and "alpha" not in beta
    said = capsys.readouterr()
    assert "alpha 1" not in said.out + said.err and "beta 1" not in said.out + said.err
    assert "==> alpha" in said.out and "<== beta: passed" in said.out
    assert sys.stdout is not None and type(sys.stdout).__name__ != "_Router"  # put back afterwards


def test_a_crashing_stage_does_not_stop_the_others_running_with_it(tmp_path):
    def boom() -> int:
        raise RuntimeError("the tool fell over")

    chosen = [
        Stage("bad", "b", (Step("b", call=boom),), together=True),
        Stage("good", "g", (Step("g", (sys.executable, "-c", "print('fine')")),), together=True),
    ]
    bad, good = run_stages(chosen, {}, tmp_path)
    assert bad.code == 1 and "the tool fell over" in bad.log.read_text()
    assert good.code == 0 and "fine" in good.log.read_text()


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"
NAP = "import time; time.sleep(0.6)"


def test_each_stage_reports_the_cpu_its_processes_used_not_the_time_they_waited(tmp_path):
    def burn_in_process() -> int:
        exec(BURN)
        return 0

    chosen = [
        Stage("burn", "b", (Step("b", (sys.executable, "-c", BURN)),), together=True),
        Stage("nap", "n", (Step("n", (sys.executable, "-c", NAP)),), together=True),
        Stage("alone", "a", (Step("a", (sys.executable, "-c", BURN)), Step("i", call=burn_in_process))),
    ]
    burn, nap, alone = run_stages(chosen, {}, tmp_path)
    assert burn.cpu is not None and burn.cpu >= 0.35
    assert nap.cpu is not None and nap.cpu < 0.3 <= nap.seconds
    assert alone.cpu is not None and alone.cpu >= 0.75  # the tool's CPU and this thread's own


def test_a_required_stage_that_fails_stops_the_build_there(tmp_path):
    ran: list[str] = []

    def step(name: str, code: int):
        def call() -> int:
            ran.append(name)
            return code

        return call

    chosen = [
        Stage("lint", "l", (Step("l", call=step("lint", 2)),), required=True),
        Stage("kit", "k", (Step("k", call=step("kit", 0)),)),
        Stage("tool", "t", (Step("t", call=step("tool", 0)),), together=True),
    ]
    results = run_stages(chosen, {}, tmp_path)
    assert ran == ["lint"] and [r.stage.name for r in results] == ["lint"]
    assert results[0].outcome == "bad input: exit 2"
