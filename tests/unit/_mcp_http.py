"""A real MCP server process on streamable HTTP, shared by the runs of a test module that only read from it:
one process instead of one per agent run (each stdio server started again costs a second of CPU, most of it
the `mcp` SDK's import).

    with serving([sys.executable, "tests/unit/_mcp_shop.py", "--port", "0"]) as url:   # http://127.0.0.1:N/mcp
        ...

The server says where it listens on stderr (uvicorn's "running on", `kit mcp`'s "serving"); the rest of its
stderr is read and dropped, so a chatty server never blocks on a full pipe.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

LISTENING = re.compile(r"http://127\.0\.0\.1:(\d+)")


@contextmanager
def serving(argv: list[str], timeout: float = 60) -> Iterator[str]:
    """The server `argv` (listening on 127.0.0.1, any port) until the block ends: its MCP URL."""
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    said: list[str] = []
    port: list[str] = []
    up = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if not port and (m := LISTENING.search(line)):
                port.append(m.group(1))
                up.set()
            elif not port:
                said.append(line)
        up.set()  # the server exited before it listened

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        up.wait(timeout)
        assert port, f"{' '.join(argv)} did not start listening: {''.join(said)[-2000:]}"
        yield f"http://127.0.0.1:{port[0]}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        reader.join(10)
