"""Promptfoo's tests: this repository's cases ([tool.kit] cases), read at every eval (kit_promptfoo.cases).
Written by `kit init`."""

from kit_promptfoo.cases import generate_tests

__all__ = ["generate_tests"]
