"""Promptfoo extension: every eval's results into the kit's store (kit_promptfoo.store_hook). Written by `kit init`."""

from kit_promptfoo.store_hook import afterAll

__all__ = ["afterAll"]
