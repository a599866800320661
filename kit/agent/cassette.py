"""Tool record/replay: every tool response (and model response) of a run, in a plain JSON file.

Entries are keyed by tool name + canonical arguments (`kit.canonical.canonical`), so key order and 1 vs
1.0 never cause a miss; repeated calls with the same key replay their responses in recorded order. A call
with no recording raises ReplayMiss naming the tool and the arguments. The file also keeps the rows of
the tables the run changed, so a replayed run reports the same `end_state` without touching a database.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from kit.canonical import canonical

FORMAT = 1


class ReplayMiss(LookupError):
    """A call the cassette has no recording for (or more calls than were recorded)."""


def model_key(request: dict[str, Any]) -> str:
    """A model request's key: what the model saw (model, messages, tool names), hashed for brevity."""
    seen = {
        "model": request.get("model"),
        "messages": request.get("messages"),
        "tools": [t.get("function", {}).get("name") for t in request.get("tools") or []],
    }
    return hashlib.sha256(canonical(seen).encode()).hexdigest()[:24]


class Cassette:
    def __init__(self, path: str | Path, data: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.data: dict[str, Any] = data or {"format": FORMAT, "tools": [], "model": [], "end_state_changes": {}}
        self._tools: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        self._model: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        for entry in self.data.get("tools", []):
            self._tools[entry["tool"] + " " + canonical(entry["args"])].append(entry)
        for entry in self.data.get("model", []):
            self._model[entry["request"]].append(entry)

    @classmethod
    def load(cls, path: str | Path) -> Cassette:
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ReplayMiss(f"{p}: no cassette: record it first (run with record=True)") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}: cassette is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{p}: not a cassette of format {FORMAT}")
        return cls(p, data)

    # Replay
    def tool_response(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        queue = self._tools.get(tool + " " + canonical(args))
        if not queue:
            raise ReplayMiss(f"{self.path}: no recorded response for tool {tool} with arguments {canonical(args)}")
        return queue.popleft()

    def model_response(self, request: dict[str, Any]) -> dict[str, Any]:
        key = model_key(request)
        queue = self._model.get(key)
        if not queue:
            last = (request.get("messages") or [{}])[-1]
            raise ReplayMiss(
                f"{self.path}: no recorded model response for model {request.get('model')} "
                f"(request {key}, last message {canonical(last)[:200]})"
            )
        return queue.popleft()["response"]

    def unused(self) -> list[str]:
        return [k for k, q in self._tools.items() for _ in q] + [
            f"model {k}" for k, q in self._model.items() for _ in q
        ]

    def end_state(self, seed: dict[str, tuple[dict[str, Any], ...]]) -> dict[str, list[dict[str, Any]]]:
        changes = self.data.get("end_state_changes", {})
        return {t: [dict(r) for r in changes.get(t, rows)] for t, rows in seed.items()}

    # Record
    def add_tool(self, tool: str, args: dict[str, Any], output: Any, error: str | None) -> None:
        self.data["tools"].append({"tool": tool, "args": args, "output": output, "error": error})

    def add_model(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        self.data["model"].append({"request": model_key(request), "response": response})

    def save(
        self,
        *,
        case_id: str,
        recorded_with: dict[str, Any],
        end_state: dict[str, list[dict[str, Any]]],
        seed: dict[str, tuple[dict[str, Any], ...]],
    ) -> None:
        # Only the tables the run changed: the file stays small and the diff shows exactly the writes.
        changes = {t: rows for t, rows in end_state.items() if canonical(rows) != canonical(list(seed.get(t, ())))}
        out = {
            "format": FORMAT,
            "case_id": case_id,
            "recorded_with": recorded_with,
            "tools": self.data["tools"],
            "model": self.data["model"],
            "end_state_changes": changes,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1, sort_keys=False, default=str) + "\n", encoding="utf-8")
        tmp.replace(self.path)
