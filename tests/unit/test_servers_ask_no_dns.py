"""The kit's HTTP servers (the model doubles, the recording endpoint's base, `kit serve`) bind without asking
DNS for their address's name. The standard library's server does (`socket.getfqdn`): for 127.0.0.2, which
/etc/hosts does not name, that is a query to the machine's resolver, and a stall where none answers."""

from __future__ import annotations

import socket
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest

from kit.doubles.sampling_model import SamplingModel
from kit.receiver.http import Front


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every address a name was asked for (none is answered)."""
    asked: list[str] = []

    def refuse(address: str) -> Any:
        asked.append(address)
        raise OSError("no name lookups in this test")

    monkeypatch.setattr(socket, "gethostbyaddr", refuse)
    return asked


def test_the_standard_server_asks_for_its_name(lookups: list[str]) -> None:
    """What the kit's servers avoid (and the proof that the fixture sees it)."""
    server = ThreadingHTTPServer(("127.0.0.2", 0), BaseHTTPRequestHandler)
    server.server_close()
    assert lookups == ["127.0.0.2"]


def test_a_model_double_on_127_0_0_2_asks_no_name_and_serves(lookups: list[str]) -> None:
    with SamplingModel(["fine"]) as model:
        assert model.base_url.startswith("http://127.0.0.2:")
        request = urllib.request.Request(
            model.base_url + "/v1/chat/completions",
            data=b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert b"fine" in answer.read()
    assert lookups == []


def test_kit_serve_binds_on_any_address_without_asking_its_name(lookups: list[str]) -> None:
    front = Front(cast(Any, None), "127.0.0.2", 0)  # bound, not started: the receiver is not reached
    try:
        assert front.server.server_name == "127.0.0.2" and front.port > 0
    finally:
        front.server.server_close()
    assert lookups == []
