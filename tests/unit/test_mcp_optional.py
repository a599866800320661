"""The MCP SDK is an extra (`agent-eval-kit[mcp]`): without it the red team, the importers and the runner still
load, and `kit mcp` says what to install instead of a traceback."""

from __future__ import annotations

import subprocess
import sys

# A finder that hides the MCP SDK, as in an install without the extra.
HIDE = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mcp", "mcp_types", "fastmcp"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Hide())
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", HIDE + code], capture_output=True, text=True, timeout=120)


def test_the_red_team_and_importers_load_without_the_mcp_sdk() -> None:
    out = _run(
        "import kit_promptfoo.redteam.config, kit_promptfoo.redteam.generator, kit_promptfoo.redteam.hooks\n"
        "import kit_promptfoo.redteam.target, kit.importers.mcp, kit.runner.frameworks, kit.mcp.attacked\n"
        "print('loaded')"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "loaded"


def test_kit_mcp_without_the_sdk_says_what_to_install() -> None:
    out = _run("import sys; from kit.cli import main; sys.exit(main(['mcp', 'replay', 'missing.json']))")
    assert out.returncode == 2, out.stderr
    assert "pip install 'agent-eval-kit[mcp]'" in out.stderr
    assert "Traceback" not in out.stderr
