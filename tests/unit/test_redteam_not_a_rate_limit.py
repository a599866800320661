"""Promptfoo reads any provider error holding "429" as a rate limit and backs off a minute at a time. A judge
whose port holds 429 but answers HTTP 500 must fail at once (Promptfoo's own rate-limit test, run on the kit's
grader and generator answers); a judge answering a real HTTP 429 is a rate limit, named as such."""

from __future__ import annotations

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kit.plan import PLAN_ENV, current_plan
from kit_promptfoo.redteam import generator

ROOT = Path(__file__).resolve().parents[2]
GRADER = ROOT / "kit_promptfoo" / "redteam" / "grader.cjs"


def _server(status: int) -> ThreadingHTTPServer:
    class Answer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps({"error": {"message": "scripted failure"}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    for port in [*range(44290, 44300), *range(34290, 34300), *range(24290, 24300)]:  # each holds 429
        try:
            srv = ThreadingHTTPServer(("127.0.0.1", port), Answer)
        except OSError:
            continue
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return srv
    pytest.skip("no free port holding 429 on 127.0.0.1")


def _rate_limit_test() -> Path:
    """Promptfoo's own module holding createProviderRateLimitOptions (its file name is a build hash)."""
    for f in sorted((ROOT / "node_modules" / "promptfoo" / "dist" / "src").glob("shared-*.cjs")):
        if 'exports, "createProviderRateLimitOptions"' in f.read_text(encoding="utf-8"):
            return f
    pytest.skip("Promptfoo is not installed (make promptfoo-install)")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.kit]\n")
    monkeypatch.chdir(tmp_path)
    for var in ("KIT_PLAN", "KIT_AGENT"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_only_a_real_429_is_a_rate_limit(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    servers = {500: _server(500), 429: _server(429)}
    runs = {}
    try:
        monkeypatch.setenv("KIT_JUDGE_MODEL", "judge-2025-01-01")
        monkeypatch.setenv("KIT_JUDGE_RETRIES", "0")
        for status, srv in servers.items():
            monkeypatch.setenv("KIT_JUDGE_BASE_URL", f"http://127.0.0.1:{srv.server_address[1]}/v1")
            asked = generator.call_api("Grade this output: ...", {}, {})  # the Python path (redteam.provider)
            runs[status] = {"plan": current_plan().env()[PLAN_ENV], "python": asked}
        # One Node process: the kit's grader (the JavaScript path) against each judge, and Promptfoo's own test.
        script = (
            f"const G = require({json.dumps(str(GRADER))});"
            f"const limits = require({json.dumps(str(_rate_limit_test()))}).createProviderRateLimitOptions();"
            "const runs = JSON.parse(process.argv[1]);"
            "(async () => { const out = {}; for (const [status, run] of Object.entries(runs)) {"
            "process.env.KIT_PLAN = run.plan; delete require.cache[require.resolve(" + json.dumps(str(GRADER)) + ")];"
            "const r = await new (require(" + json.dumps(str(GRADER)) + "))().callApi('Grade this output: ...');"
            "out[status] = {r, limited: limits.isRateLimited(r), python: limits.isRateLimited(run.python)}; }"
            "console.log(JSON.stringify(out)); })();"
        )
        env = {"PATH": "/usr/bin:/bin:/usr/local/bin"}
        done = subprocess.run(
            ["node", "-e", script, json.dumps(runs)], env=env, capture_output=True, text=True, timeout=60
        )
    finally:
        for srv in servers.values():
            srv.shutdown()
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    for status, srv in servers.items():
        said = got[str(status)]
        assert str(srv.server_address[1]) in said["r"]["error"] and f"HTTP {status}" in said["r"]["error"], said
        assert said["limited"] is (status == 429) and said["python"] is (status == 429), (status, said, runs[status])
        assert ("rate limited" in said["r"]["error"]) is (status == 429)
