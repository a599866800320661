"""The recording file format and the kit's matcher (kit.recording.format, match, files)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from kit.errors import KitInputError
from kit.recording import Exchange, Recording, Request, Response, prune, read, save_attempt, write
from kit.recording.match import first_difference, key, request_of
from kit.recording.wire import events, kept


def _ex(content: str, answer: str = "ok") -> Exchange:
    body = {"model": "m-2024-01-01", "messages": [{"role": "system", "content": content}]}
    return Exchange(
        request=Request(method="POST", path="/v1/chat/completions", body=body),
        response=Response(status=200, headers={"content-type": "application/json"}, body={"answer": answer}),
    )


def test_round_trip_sorted_and_readable(tmp_path: Path) -> None:
    rec = Recording(case="desk/refund", model="m-2024-01-01", attempts={"0": [_ex("a")], "1": [_ex("a", "no")]})
    path = write(tmp_path, rec)
    assert path == tmp_path / "desk" / "refund.json"
    text = path.read_text()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert read(tmp_path, "desk/refund") == rec
    assert read(tmp_path, "absent") is None


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"format": 2, "case": "c", "attempts": {}}, "format 1"),
        ({"format": 1, "case": "c", "attempts": {"x": []}}, "attempts"),
        ({"format": 1, "case": "c", "attempts": {"0": [{"request": {"method": "GET", "path": "/"}}]}}, "response"),
        ({"format": 1, "case": "other", "attempts": {}}, "case 'other'"),
        ({"format": 1, "case": "c", "attempts": {}, "calls": []}, "calls"),
    ],
)
def test_a_file_of_another_shape_is_refused_by_name(tmp_path: Path, doc: dict, says: str) -> None:
    (tmp_path / "c.json").write_text(json.dumps(doc))
    with pytest.raises(KitInputError) as e:
        read(tmp_path, "c")
    assert says in str(e.value) and "c.json" in str(e.value)


def test_key_ignores_key_order_host_and_secrets() -> None:
    a = request_of("post", "https://api.example.com/v1/x?alt=sse&key=SECRET", b'{"b": 1, "a": [1.0], "api_key": "S"}')
    b = request_of("POST", "http://127.0.0.2:9/v1/x?alt=sse", b'{"a": [1], "b": 1}')
    assert key(a) == key(b)
    assert a.path == "/v1/x?alt=sse" and "SECRET" not in a.model_dump_json() and "api_key" not in a.body


def test_first_difference_names_the_place() -> None:
    old = {"model": "m", "messages": [{"content": "be kind"}], "tools": [1, 2]}
    assert first_difference(old, {**old, "messages": [{"content": "be rude"}]}) == "messages[0].content changed"
    assert first_difference(old, {**old, "tools": [1, 2, 3]}) == "tools[2] is new"
    assert first_difference(old, {**old, "model": "n"}) == "model changed"


def test_streams_are_kept_as_their_events() -> None:
    stream = b'data: {"a": 1}\n\ndata: [DONE]\n\n'
    r = kept({"status": {"code": 200}, "headers": {"Content-Type": ["text/event-stream"]}, "body": {"string": stream}})
    assert r.text == events(stream.decode()) == ['data: {"a": 1}\n\n', "data: [DONE]\n\n"]
    assert r.content() == stream


def test_attempts_saved_at_once_are_all_kept_and_prune_drops_the_unused(tmp_path: Path) -> None:
    threads = [
        threading.Thread(target=save_attempt, args=(tmp_path, "c", i, [_ex(str(i))], "m-2024-01-01")) for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec = read(tmp_path, "c")
    assert rec is not None and sorted(rec.attempts, key=int) == [str(i) for i in range(8)]
    write(tmp_path, Recording(case="gone"))
    write(tmp_path, Recording(case="_judge/c", attempts={"0": [], "5": []}))
    gone = prune(tmp_path, {"c": 3})
    assert not (tmp_path / "gone.json").exists()
    assert sorted((read(tmp_path, "c") or rec).attempts) == ["0", "1", "2"]
    assert (read(tmp_path, "_judge/c") or rec).attempts == {"0": []}
    assert len(gone) == 3


def test_a_session_adds_to_its_own_attempt_and_replaces_an_earlier_sessions(tmp_path: Path) -> None:
    save_attempt(tmp_path, "c", 0, [_ex("old")], None, "evals-1")
    save_attempt(tmp_path, "c", 0, [_ex("plain")], None, "evals-2")  # a new session: recorded afresh
    save_attempt(tmp_path, "c", 0, [_ex("base64")], None, "evals-2")  # the same attack in another form
    rec = read(tmp_path, "c")
    assert rec is not None
    assert [ex.request.body["messages"][0]["content"] for ex in rec.attempts["0"]] == ["plain", "base64"]
    assert (tmp_path / ".kit" / ".gitignore").read_text() == "*\n"


def test_sessions_at_once_keep_their_own_attempts_apart(tmp_path: Path) -> None:
    save_attempt(tmp_path, "redteam", 0, [_ex("a1")], None, "evals-red")
    save_attempt(tmp_path, "golden", 0, [_ex("g")], None, "host-1")  # another stage's host, at the same time
    save_attempt(tmp_path, "redteam", 0, [_ex("a2")], None, "evals-red")
    rec = read(tmp_path, "redteam")
    assert rec is not None and [ex.request.body["messages"][0]["content"] for ex in rec.attempts["0"]] == ["a1", "a2"]
