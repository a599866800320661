"""The red team's beforeAll hook (kit_promptfoo.redteam.hooks): names each attack by its plugin and strategy and
leaves out the LLM graders no judge can answer. Written by `kit init`."""

from kit_promptfoo.redteam.hooks import beforeAll

__all__ = ["beforeAll"]
