"""The kit's MCP server against careless and hostile surroundings: attack files tied to their process, a
cassette the SDK cannot carry, names that would drive the terminal, a SIGTERM mid-call, a client that passes
the server only the SDK's default environment, misses an agent swallows."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kit.mcp import attacked
from kit.mcp.process import start_time


def test_an_attack_file_attacks_only_the_process_it_was_made_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # The server reads its parent's file: here the parent is this process.
    monkeypatch.setattr(attacked.os, "getppid", os.getpid)
    with attacked.attacking(tmp_path, "rug-pull") as mine:
        assert attacked.attack_for_parent(tmp_path) == "rug-pull"
        made = json.loads(mine.read_text())
        assert made["started"] == start_time(os.getpid())
        # A file a dead worker of the same pid left (another start time) attacks nothing, and is pruned.
        mine.write_text(json.dumps({"attack": "rug-pull", "started": made["started"] - 1}))
        assert attacked.attack_for_parent(tmp_path) is None
        attacked._prune(mine.parent)
        assert not mine.exists()
