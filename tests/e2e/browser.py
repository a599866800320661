"""Headless Chromium for the report's tests: one set of flags (nothing the page asks for leaves the machine),
and a probe that uses the page like a person and reads back what it saw."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--proxy-server=127.0.0.1:9",  # belt and braces: nothing the page asks for may leave the machine
]


def chromium(*args: str, profile: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHROMIUM or "chromium", *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def probe(page: Path, script: str, folder: Path, *, profile: Path, timeout: float = 120) -> dict[str, Any]:
    """What `script` (a <script> that writes JSON into <pre id="probe">) found in `page`, opened in Chromium."""
    probed = folder / "probed.html"
    probed.write_text(page.read_text().replace("</body>", script, 1))
    dom = chromium("--dump-dom", probed.as_uri(), profile=profile, timeout=timeout)
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-3000:]
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return json.loads(text)
