"""Write golden/tools.json (tool name -> JSON Schema of its arguments) from the agent's tools.

python -m kit.agent.tools_json [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kit.agent.tools import SCHEMAS

PATH = Path("golden") / "tools.json"  # in the project's folder (the kit's checkout)


def render() -> str:
    return json.dumps(SCHEMAS, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    from kit.settings import project_root

    argv = sys.argv[1:] if argv is None else argv
    path = project_root() / PATH
    if "--check" in argv:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != render():
            print(f"{path} is out of date: run python -m kit.agent.tools_json", file=sys.stderr)
            return 1
        return 0
    path.write_text(render(), encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
