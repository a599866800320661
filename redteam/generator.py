"""The red team's attack generator: a Promptfoo provider (`redteam.provider`) that answers from the corpus.

Promptfoo's local plugins ask their generation model for attacks with a template and read the answer's
`Prompt:` lines. No model is asked here: each plugin in redteam/promptfooconfig.yaml carries a modifier
`kit_category: <category>`, which Promptfoo appends to the template, and this provider answers with every
attack of that category from redteam/attacks.yaml. Promptfoo then samples `numTests` of them and applies
its static strategies. Same corpus, same attacks, every run; nothing leaves the machine.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # Promptfoo loads this file by path

import corpus

_CATEGORY = re.compile(r"^\s*kit_category:\s*([a-z-]+)\s*$", re.M)


def call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    found = _CATEGORY.findall(prompt or "")
    if not found and "Extract only real-world entities" in (prompt or ""):
        # Promptfoo asks for named entities to keep out of its graders' way; the corpus names none.
        return {"output": ""}
    if not found:
        # Not a generation request the kit answers (no kit_category modifier): say so rather than invent.
        return {"error": "kit attack generator: no `kit_category` modifier in the request; see redteam/attacks.yaml"}
    attacks = corpus.by_category(found[-1])
    if not attacks:
        return {"error": f"kit attack generator: no attacks in category {found[-1]!r}"}
    return {"output": "\n".join(f"Prompt: {a.text}" for a in attacks)}
