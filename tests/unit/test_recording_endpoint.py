"""The kit's endpoint for model calls that leave from Node (kit.recording.endpoint): a plain HTTP client, as
Promptfoo's attacker is, records through it and then replays from it with the model stopped."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kit.doubles.sampling_model import SamplingModel
from kit.recording import Recordings, read
from kit.recording.endpoint import Endpoint

KEY = "sk-attacker-NEVER-WRITTEN-9"


def _ask(base_url: str, content: str) -> tuple[int, dict, str]:
    body = {"model": "attacker-2025-01-01", "messages": [{"role": "user", "content": content}]}
    req = urllib.request.Request(
        base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers.items()), json.loads(r.read())["choices"][0]["message"]["content"]
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers.items()), e.read().decode()


def test_node_side_calls_are_recorded_and_replayed_through_the_endpoint(tmp_path: Path) -> None:
    asks = ["attack 1", "attack 2", "attack 1"]  # the same request twice: its second answer is its own
    with SamplingModel(["try harder", "give up", "pivot"], seed=9) as model:
        record = Recordings("record", tmp_path)
        with Endpoint(record, "_attacker/redteam", upstream=model.base_url + "/v1", model="attacker-2025-01-01") as ep:
            assert ep.base_url.endswith("/v1")
            recorded = [_ask(ep.base_url, a)[2] for a in asks]
        assert all(h["authorization"] == f"Bearer {KEY}" for _, _, h in model.requests)
    saved = read(tmp_path, "_attacker/redteam")
    assert saved is not None and saved.model == "attacker-2025-01-01" and len(saved.attempts["0"]) == 3
    assert all(KEY not in p.read_text() for p in tmp_path.rglob("*.json"))

    gone = "http://127.0.0.2:9/v1"  # the model is stopped: its base URL is only the path the Node side uses
    with Endpoint(
        Recordings("replay", tmp_path), "_attacker/redteam", upstream=gone, model="attacker-2025-01-01"
    ) as ep:
        assert [_ask(ep.base_url, a)[2] for a in asks] == recorded
        status, headers, text = _ask(ep.base_url, "attack 3")
    assert status == 400 and headers.get("x-should-retry") == "false"
    assert "case '_attacker/redteam' attempt 0: POST /v1/chat/completions: messages[0].content changed" in text
    assert ep.misses and "messages[0].content changed" in ep.misses[0]
    with pytest.raises(ValueError, match="upstream"):
        Endpoint(Recordings("record", tmp_path), "_attacker/redteam")
