"""Where printed text goes while stages run at the same time.

A kit step runs in this process (no interpreter to start), and what it prints belongs in its stage's
log. `contextlib.redirect_stdout` swaps `sys.stdout` for the whole process, so with two stages in two
threads one stage's output would land in the other's log. While `routed()` is active, `sys.stdout` and
`sys.stderr` are routers: a thread inside `to(log)` writes to that log, every other write goes where it
went before.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

_local = threading.local()


class _Router:
    """A text stream that writes to the calling thread's target, else to the stream it replaced."""

    def __init__(self, default: TextIO) -> None:
        self.default = default

    def _target(self) -> TextIO:
        return getattr(_local, "target", None) or self.default

    def write(self, text: str) -> int:
        return self._target().write(text)

    def writelines(self, lines: Any) -> None:
        self._target().writelines(lines)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return self._target().isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, errors, fileno ...: the target's own
        return getattr(self._target(), name)


@contextlib.contextmanager
def routed() -> Iterator[None]:
    """Install the routers on sys.stdout and sys.stderr for the block (nested uses keep the outer ones)."""
    if isinstance(sys.stdout, _Router):
        yield
        return
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Router(out), _Router(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


@contextlib.contextmanager
def to(log: TextIO) -> Iterator[None]:
    """This thread's printed output (stdout and stderr) into `log` for the block."""
    if not isinstance(sys.stdout, _Router):  # one stage at a time: the plain redirect does
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            yield
        return
    before = getattr(_local, "target", None)
    _local.target = log
    try:
        yield
    finally:
        log.flush()
        _local.target = before
