"""Runs `kit run` on the MCP desk (tests/unit/_mcp_desk.py) with the scripted model double started here, so
the whole run can live in a network namespace of its own (`unshare -n`: only its loopback, brought up first).

    python tests/unit/_mcp_suite.py [kit run arguments...]

The MCP servers come from the environment (MCP_SHOP_COMMAND, ...); kit run's exit code is this one's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(argv: list[str]) -> int:
    from _mcp_desk import desk_model

    from kit.doubles.openai_server import ScriptedOpenAIServer

    with ScriptedOpenAIServer(desk_model) as srv:
        env = {**os.environ, "DESK_MODEL_URL": srv.base_url, "PYTHONPATH": str(HERE)}
        kit = str(Path(sys.executable).with_name("kit"))
        return subprocess.run([kit, "run", "--agent", "_mcp_desk:run", *argv], env=env, timeout=300).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
