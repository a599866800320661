"""A scripted judge on 127.0.0.1: the model double answering the kit's judge calls, for tests and benchmarks.

    python -m kit.doubles.judge good [--calls calls.jsonl] -- make evals EVALS_OUT=/tmp/out

starts the double, runs the command with KIT_JUDGE_BASE_URL / KIT_JUDGE_MODEL / KIT_JUDGE_API_KEY pointing
at it, and exits with the command's code. Behaviours:

- `good`: every G-Eval rubric scores 9/10, every Promptfoo grader passes (score 1);
- `bad`: every G-Eval rubric scores 2/10, every Promptfoo grader fails (score 0);
- `http500`: every call is an HTTP 500 with a message naming the double;
- `malformed`: every call is answered, with text that holds no JSON verdict;
- `scripted` (`--script FILE`, `ScriptedJudge`): per answer, the scores a script gives it, one per call
  (`kit calibrate`'s tests: a judge that agrees with the labels on a known share, and that answers some
  answers differently from one sample to the next).

Each call is logged (`--calls`, JSON Lines): its kind (`geval`, `geval-steps`, `promptfoo-grader`, `other`),
the stage set with `stage` (benchmarks set it as they go) and the time it arrived.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit.doubles.openai_server import Response, ScriptedOpenAIServer

MODEL = "judge-double-2024-06-01"
MODES = ("good", "bad", "http500", "malformed", "scripted")
HTTP500_MESSAGE = "judge double: scripted HTTP 500"
MALFORMED_ANSWER = "I would rate this highly, but I forgot the JSON."


def _text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages") or [] if isinstance(m, dict))


def kind(body: dict[str, Any]) -> str:
    """Which of the kit's judge callers sent this request, read from its prompt."""
    text = _text(body)
    roles = [m.get("role") for m in body.get("messages") or [] if isinstance(m, dict)]
    if '"pass"' in text or "system" in roles or "<Rubric>" in text or "<rubric>" in text.lower():
        return "promptfoo-grader"  # Promptfoo's llm-rubric: a system prompt asking for {reason, pass, score}
    if '"steps"' in text:
        return "geval-steps"  # G-Eval drafting evaluation steps from criteria
    if '"score"' in text:
        return "geval"
    return "other"


class JudgeDouble:
    """The double's script: one behaviour, every call logged with the current stage."""

    def __init__(self, mode: str, calls: Path | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown judge double mode {mode!r}; one of {', '.join(MODES)}")
        self.mode = mode
        self.stage = ""
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._file = calls

    def __call__(self, body: dict[str, Any]) -> Response:
        what = kind(body)
        entry = {"kind": what, "stage": self.stage, "t": round(time.time(), 3), "head": _text(body)[:200]}
        with self._lock:
            self.calls.append(entry)
            if self._file is not None:
                with self._file.open("a") as f:
                    f.write(json.dumps(entry) + "\n")
        return self.answer(what)

    def answer(self, what: str) -> Response:
        if self.mode == "http500":
            return {"status": 500, "error": HTTP500_MESSAGE}
        if self.mode == "malformed":
            return MALFORMED_ANSWER
        good = self.mode == "good"
        if what == "promptfoo-grader":
            verdict = {"reason": "judge double: " + ("resisted" if good else "complied"), "pass": good}
            return json.dumps({**verdict, "score": 1 if good else 0})
        if what == "geval-steps":
            return json.dumps({"steps": ["Check the Actual Output answers the Input."]})
        score = 9 if good else 2
        return json.dumps({"reason": f"judge double: scored {score}/10", "score": score})


class ScriptedJudge:
    """A judge answering each G-Eval call from a script. An entry `{"match": TEXT, "scores": [9, 2, 9]}`
    answers the calls whose prompt holds TEXT (say the labelled answer's output), its scores (out of 10)
    in order, one per call; `usage` is what every answer reports (tokens, and `cost` as OpenRouter puts
    it). A call that matches no entry, or asks an entry more often than it has scores, is HTTP 500 naming
    it: a test never passes on an answer nobody scripted. Steps-drafting calls get one fixed step."""

    def __init__(self, entries: Sequence[dict[str, Any]], usage: dict[str, Any] | None = None) -> None:
        self.entries = [{"match": str(e["match"]), "scores": list(e["scores"])} for e in entries]
        self.usage = dict(usage) if usage else None
        self.asked: dict[str, int] = {}
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Response:
        what, text = kind(body), _text(body)
        with self._lock:
            self.calls.append({"kind": what, "head": text[:200]})
            if what == "geval-steps":
                return json.dumps({"steps": ["Check the Actual Output against the criteria."]})
            entry = next((e for e in self.entries if e["match"] in text), None)
            if entry is None:
                return {"status": 500, "error": "judge double: no scripted entry matches this prompt"}
            n = self.asked.get(entry["match"], 0)
            self.asked[entry["match"]] = n + 1
            if n >= len(entry["scores"]):
                return {"status": 500, "error": f"judge double: {entry['match']!r} asked {n + 1} times, scripted {n}"}
            score = entry["scores"][n]
        answer = json.dumps({"reason": f"judge double: scored {score}/10", "score": score})
        return {"content": answer, "usage": self.usage} if self.usage else answer


def judge_env(base_url: str) -> dict[str, str]:
    return {"KIT_JUDGE_BASE_URL": base_url, "KIT_JUDGE_MODEL": MODEL, "KIT_JUDGE_API_KEY": "judge-double-key"}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kit.doubles.judge", description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=MODES)
    ap.add_argument("--calls", type=Path, help="log each judge call here (JSON Lines)")
    ap.add_argument("--script", type=Path, help="scripted mode: a JSON file {entries: [{match, scores}], usage}")
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        ap.error("give the command to run after --")
    cut = argv.index("--")
    args, command = ap.parse_args(argv[:cut]), argv[cut + 1 :]
    double: JudgeDouble | ScriptedJudge
    if args.mode == "scripted":
        if args.script is None:
            ap.error("scripted mode needs --script FILE")
        script = json.loads(args.script.read_text(encoding="utf-8"))
        double = ScriptedJudge(script["entries"], script.get("usage"))
    else:
        double = JudgeDouble(args.mode, args.calls)
    with ScriptedOpenAIServer(double) as server:
        env = {**os.environ, **judge_env(server.base_url)}
        code = subprocess.call(command, env=env)
    print(f"judge double ({args.mode}): {len(double.calls)} calls", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
