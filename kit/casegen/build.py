"""A case from a production trace, written into the user's repository: the case file (its turns, context and
checks to review), the trace it came from (masked when asked), the tools' answers as cassettes and the
model's as recordings. The one function the command calls: `write_case(CaseRequest(...)) -> Written`.

    <out>/<id>.yaml                      the case
    <out>/traces/<id>.json               the trace, its case_id the new id (`kit check` judges the case on it)
    <out>/cassettes/<id>.json            the function tools' answers (kit.agent.cassette)
    <out>/cassettes/<id>.mcp/<server>.json  each MCP server's answers (kit.mcp.cassette)
    <recordings folder>/<id>.json        the model's answers (kit.recording), when the trace holds them
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.case import Case, Suite, load_invariants, parse_case, parse_check
from kit.casegen import draft, model, place, tapes
from kit.casegen.casefile import render
from kit.casegen.judged import Verdicts, judge
from kit.casegen.propose import Proposal, propose
from kit.casegen.redact import Masker
from kit.casegen.source import Source
from kit.errors import KitInputError
from kit.evaluate import run_check
from kit.toolspec import Effect, tool_effects, tool_schemas
from kit.trace import Trace, parse_trace


@dataclass(frozen=True)
class CaseRequest:
    """What the command resolved from its flags and the plan."""

    source: Source
    suite: Suite  # the suite's cases (ids that are taken; the stored run's case)
    out: Path  # the folder the case goes into, already checked (`place.out_folder`)
    invariants: Path | None = None  # the suite's invariants file
    case_invariants: Path | None = None  # the invariants file the written case will load
    tools: Path | None = None  # the suite's tools.json
    recordings: Path | None = None  # the settings' model-call recordings folder (absolute)
    root: Path | None = None  # the repository: the recordings folder must be inside it when one is written
    wanted_id: str | None = None
    masker: Masker = field(default_factory=lambda: Masker(()))


@dataclass(frozen=True)
class Written:
    case_id: str
    files: list[Path]
    verdicts: Verdicts
    lines: list[str]  # what the command prints after the files: where the model's answers come from, notes


def _json_file(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        raise KitInputError(f"cannot read {what}: {e}", file=str(path)) from None


def _tools(path: Path | None) -> tuple[dict[str, Effect], dict[str, Any]]:
    if path is None:
        return {}, {}
    data = _json_file(path, "tools.json")
    try:
        return tool_effects(data), tool_schemas(data)
    except ValueError as e:
        raise KitInputError(str(e), file=str(path)) from None


def _masked(req: CaseRequest) -> Trace:
    data = req.masker.value(req.source.trace)
    return parse_trace(data, file=str(req.source.file) if req.source.file else None)


def _files(out: Path, case_id: str, trace: Trace, recordings: Path | None = None) -> dict[str, Path]:
    paths = {
        "case": place.target(out, case_id, ".yaml"),
        "trace": place.target(out / "traces", case_id, ".json"),
    }
    if tapes.function_calls(trace):
        paths["cassette"] = place.target(out / "cassettes", case_id, ".json")
    for server in tapes.mcp_servers(trace):
        folder = place.target(out / "cassettes", case_id, ".mcp")
        paths[f"mcp:{server}"] = place.target(folder, server, ".json")
    if recordings is not None:
        paths["recording"] = model.path(recordings, case_id)
    return paths


def _choose_id(req: CaseRequest, trace: Trace) -> str:
    """The trace's id made free: no case of the suite has it and none of its files exists."""
    ids = set(req.suite.by_id())
    if req.wanted_id is not None:
        found = draft.case_id(trace, ids, wanted=req.wanted_id)
        there = place.taken(list(_files(req.out, found, trace, req.recordings).values()))
        if there is not None:
            raise KitInputError(f"--id {found!r}: {there} already exists (choose another id)")
        return found
    while True:
        found = draft.case_id(trace, ids)
        if place.taken(list(_files(req.out, found, trace, req.recordings).values())) is None:
            return found
        ids.add(found)


def _checked(
    proposals: list[Proposal], trace: Trace, case_id: str, base: Path, failing: bool
) -> tuple[list[Proposal], list[str]]:
    """The proposals that load, and, from a passing trace, pass on it; a note for each one dropped."""
    kept: list[Proposal] = []
    notes: list[str] = []
    for i, p in enumerate(proposals):
        try:
            spec = parse_check(p.check, file=None, case=case_id, index=i, base_dir=base)
        except KitInputError as e:
            notes.append(f"{p.check.get('type')} not proposed: {e.message}")
            continue
        if p.proposed and not failing:
            result = run_check(spec, trace)
            if result.outcome != "pass":
                notes.append(f"{result.name} not proposed: on this trace it does not pass ({result.reason})")
                continue
        kept.append(p)
    return kept, notes


def write_case(req: CaseRequest) -> Written:
    """The case, its trace and its recordings written from `req.source` (masked as `req.masker` says)."""
    trace = _masked(req)
    effects, schemas = _tools(req.tools)
    invariants = load_invariants(req.invariants) if req.invariants is not None else {}
    stored = _stored_case(req)
    verdicts = judge(trace, invariants, stored)
    case_id = _choose_id(req, trace)
    same_file = (
        req.invariants is not None
        and req.case_invariants is not None
        and req.invariants.resolve() == req.case_invariants.resolve()
    )
    proposals = propose(trace, verdicts, effects, by_name=lambda _name: same_file)
    checks, notes = _checked(proposals.checks, trace, case_id, req.out, verdicts.failing)
    notes = proposals.notes + notes + _unknown_tools(req.tools, trace, effects)
    made, model_note = model.recording(req.source, case_id, req.masker)
    if made is not None and req.recordings is None:
        made, model_note = None, f"{model.LIVE}: no recordings folder to write the model's answers to"
    recordings = _recordings_folder(req.recordings, req.root) if req.recordings is not None and made else None
    paths = _files(req.out, case_id, trace, recordings)
    origin = req.masker.text(req.source.origin)
    texts = _tapes(paths, trace, case_id, origin, schemas)
    if made is not None:
        texts[paths["recording"]] = model.text(made)
    fields = _fields(trace, case_id, stored, paths, req.out)
    fields["metadata"] = {
        "from_trace": {
            "source": origin,
            "verdict": "broke " + ", ".join(sorted({j.result.name for j in verdicts.broken}))
            if verdicts.failing
            else "passed the suite's checks",
            "model": "recorded" if made is not None else "live",
            **({"masked": req.masker.masked} if req.masker.masked else {}),
        }
    }
    header = _header(origin, verdicts, paths, req.out, model_note, req.masker.masked, req.masker.active)
    text = render(
        fields, checks, invariants=proposals.invariants, header=header, source=f"trace {trace.case_id}", notes=notes
    )
    _loads(text, paths["case"], invariants)
    kept = trace.model_dump(mode="json")
    kept["case_id"] = case_id
    texts = {paths["case"]: text, paths["trace"]: json.dumps(kept, indent=1, ensure_ascii=False) + "\n", **texts}
    place.write_all([b for b in (req.out, recordings) if b is not None], texts)
    lines = [f"model: {model_note}"] + [f"note: {n}" for n in notes]
    return Written(case_id, list(texts), verdicts, lines)


def _stored_case(req: CaseRequest) -> Case | None:
    """The suite's case the trace is a run of (a stored run's case, else the trace's own case id), if any."""
    case_id = req.source.stored.get("case_id") or req.source.trace.get("case_id")
    return req.suite.by_id().get(str(case_id)) if case_id is not None else None


def _unknown_tools(tools: Path | None, trace: Trace, effects: dict[str, Effect]) -> list[str]:
    unknown = sorted({n for n in trace.tool_names if n not in effects}) if tools is not None else []
    if not unknown:
        return []
    return [
        f"not in {tools.name if tools else 'tools.json'}: {', '.join(unknown)} (effect guessed from the name; "
        "kit lint names each check that uses one: add them to tools.json)"
    ]


def _recordings_folder(folder: Path, root: Path | None) -> Path:
    """The folder the model's recording goes to, checked as --out is: inside the repository, through no link."""
    if root is None:
        return folder
    try:
        return place.out_folder(folder, root)
    except KitInputError as e:
        raise KitInputError(f"the trace holds the model's calls, but the recordings folder: {e.message}") from None


def _tapes(paths: dict[str, Path], trace: Trace, case_id: str, origin: str, schemas: dict[str, Any]) -> dict[Path, str]:
    """The tools' recordings: the kit's tool cassette of the function calls, an MCP cassette per server."""
    texts: dict[Path, str] = {}
    for key, path in paths.items():
        if key == "cassette":
            texts[path] = tapes.dumped(tapes.tool_cassette(trace, case_id, origin))
        elif key.startswith("mcp:"):
            texts[path] = tapes.dumped(tapes.mcp_cassette(trace, key.removeprefix("mcp:"), schemas))
    return texts


def _fields(trace: Trace, case_id: str, stored: Case | None, paths: dict[str, Path], out: Path) -> dict[str, Any]:
    """The case's own fields: id, the user's turns, its context, its tool cassette."""
    turns = draft.user_turns(trace)
    fields: dict[str, Any] = {"id": case_id}
    if len(turns) == 1:
        fields["input"] = turns[0]
    else:
        fields["turns"] = turns
    context = draft.context_of(trace, dict(stored.context) if stored is not None else None)
    if context:
        fields["context"] = context
    if "cassette" in paths:
        fields["cassette"] = paths["cassette"].relative_to(out).as_posix()
    return fields


def _header(
    origin: str,
    verdicts: Verdicts,
    paths: dict[str, Path],
    out: Path,
    model_note: str,
    masked: dict[str, int],
    masking: bool,
) -> list[str]:
    lines = [f"Written by `kit case from-trace` from {origin}."]
    if verdicts.failing:
        broken = "; ".join(f"{j.result.name}: {j.result.reason}" for j in verdicts.broken)
        lines.append(
            f"The trace broke {broken}. This case reproduces that failure: it fails on the agent that produced "
            "the trace, naming the same check, and passes once the agent is fixed."
        )
    else:
        lines.append("The trace passed the suite's checks: the checks below say what it did, as requirements.")
    lines.append(
        "Every check marked PROPOSED was derived from that trace: review each (keep, relax or drop it) before "
        "you commit. None freezes the answer's text: a check written against the current output instead of the "
        "requirement fails on every better answer."
    )
    rel = {k: Path(os.path.relpath(p, out)).as_posix() for k, p in paths.items()}
    if "cassette" in rel:
        lines.append(f"Function tools' answers: {rel['cassette']} (the kit's tool cassette).")
    for key, value in rel.items():
        if key.startswith("mcp:"):
            lines.append(f"MCP server {key.removeprefix('mcp:')}'s answers: {value} (kit mcp replay {value}).")
    if "recording" in rel:
        lines.append(f"Model: {model_note}: {rel['recording']} (kit.recording; replayed in mode replay).")
    else:
        lines.append(f"Model: {model_note}.")
    lines.append(f"The trace, as written: {rel['trace']} (kit check --cases <this file> {rel['trace']}).")
    if masking:
        said = ", ".join(f"{n} {kind}" for kind, n in masked.items()) or "nothing found"
        lines.append(f"Masked (--mask): {said}; the same value has the same token in every file.")
    return lines


def _loads(text: str, path: Path, invariants: dict[str, Any]) -> None:
    """The case as written loads (a bug of ours here is an error, never a file that does not load)."""
    from kit.yamlio import safe_load

    docs = safe_load(text)
    try:
        parse_case(docs[0], file=str(path), base_dir=path.parent, invariants=invariants)
    except KitInputError as e:
        raise KitInputError(f"the case written from the trace does not load ({e}): nothing written") from None
