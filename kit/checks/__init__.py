"""The check catalogue (docs/CONTRACT.md). Importing this package registers every check."""

from kit.checks import agents, end_state, output, run_state, tools  # noqa: F401 - registration
from kit.checks.registry import REGISTRY, CheckDef, check

__all__ = ["REGISTRY", "CheckDef", "check"]
