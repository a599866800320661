"""The red team's attack generator (kit_promptfoo.redteam.generator): answers Promptfoo's attack requests from
[tool.kit.redteam] corpus, offline. Written by `kit init`; the red-team config names it file://redteam/generator.py."""

from kit_promptfoo.redteam.generator import call_api

__all__ = ["call_api"]
