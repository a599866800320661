"""Write golden/tools.json (tool name -> JSON Schema of its arguments) from the agent's tools.

python -m kit.agent.tools_json [--check]
"""

from __future__ import annotations

import json
import sys

from kit.agent.tools import SCHEMAS
from kit.settings import project_root

PATH = project_root() / "golden" / "tools.json"


def render() -> str:
    return json.dumps(SCHEMAS, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        current = PATH.read_text(encoding="utf-8") if PATH.exists() else ""
        if current != render():
            print(f"{PATH} is out of date: run python -m kit.agent.tools_json", file=sys.stderr)
            return 1
        return 0
    PATH.write_text(render(), encoding="utf-8")
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
