"""The gate's verdict at the head of every report: may this change merge, and the failing cases and checks
that decide it. The verdict is the gate's own (kit.commands.gate.gate_run over kit.gate.verdict, what
`kit gate` prints and `make evals` exits on), handed in as data: the report never judges a run itself.
Shown the same way as text (`kit report`, `kit compare`), as the page's first section and as the first
lines of the Markdown comparison."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html import escape

from kit.names import printable

SHOWN = 12  # problems listed per run; the rest are counted (a red team's hundreds)


@dataclass(frozen=True)
class RunVerdict:
    """The gate on one gated run: its headline, what failed it (nothing: it passed), and what it was judged
    by (the rules it recorded, the baseline and why that run)."""

    run_id: str
    source: str
    agent: str | None
    headline: str
    problems: tuple[str, ...]
    context: tuple[str, ...] = ()
    under_floor: Mapping[str, float] = field(default_factory=dict)  # case -> its floor

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class MergeVerdict:
    """The verdict on the change: every gated run passed its gate, or what failed. `others`: what else keeps
    it from merging, each with why (a run the gate could not judge, a stage of `make evals` that broke)."""

    runs: tuple[RunVerdict, ...]
    others: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return bool(self.runs) and not self.others and all(r.passed for r in self.runs)

    @property
    def problems(self) -> int:
        return sum(len(r.problems) for r in self.runs)

    def title(self) -> str:
        if self.passed:
            n = len(self.runs)
            return f"Gate passed: this change may merge ({n} gated run{'s' if n != 1 else ''}, every one passed)"
        failed = [r for r in self.runs if not r.passed]
        parts = []
        if failed:
            parts.append(f"{self.problems} problem{'s' if self.problems != 1 else ''} in {len(failed)} run(s)")
        parts += list(self.others[:2])
        if len(self.others) > 2:
            parts.append(f"{len(self.others) - 2} more")
        if not self.runs and not self.others:
            parts.append("no gated run")
        return "Gate FAILED: do not merge this change (" + "; ".join(parts) + ")"

    def under_floor(self, run_id: str) -> Mapping[str, float]:
        return next((r.under_floor for r in self.runs if r.run_id == run_id), {})

    def lines(self) -> list[str]:
        """The verdict as lines of text: the title, then each run's headline, its problems and the notes that
        say what it was judged by."""
        out = [self.title()]
        for r in self.runs:
            out.append(f"  {r.headline}")
            out += [f"    - {p}" for p in r.problems[:SHOWN]]
            if len(r.problems) > SHOWN:
                out.append(f"    ... {len(r.problems) - SHOWN} more: kit gate --run {r.run_id}")
            out += [f"    note: {n}" for n in r.context]
        out += [f"  {u}" for u in self.others]
        return [printable(line) for line in out]


def text(v: MergeVerdict) -> str:
    return "\n".join(v.lines())


def html(v: MergeVerdict) -> str:
    """The page's first section: the verdict in a coloured box, each failing run with its problems."""
    runs = []
    for r in v.runs:
        items = "".join(f"<li>{escape(p)}</li>" for p in r.problems[:SHOWN])
        if len(r.problems) > SHOWN:
            items += f'<li class="more">… {len(r.problems) - SHOWN} more: kit gate --run {escape(r.run_id)}</li>'
        notes = "".join(f'<p class="ctx">{escape(n)}</p>' for n in r.context)
        cls = "run pass" if r.passed else "run fail"
        runs.append(
            f'<div class="{cls}" data-run="{escape(r.run_id, quote=True)}"><div class="head">{escape(r.headline)}'
            f"</div>{f'<ul class=problems>{items}</ul>' if items else ''}{notes}</div>"
        )
    runs += [f'<div class="run fail"><div class="head">{escape(u)}</div></div>' for u in v.others]
    state = "pass" if v.passed else "fail"
    return (
        f'<section id="verdict" class="verdict {state}"><h2>{escape(v.title())}</h2>'
        '<p class="meta">The gate of <code>make evals</code> and <code>kit gate</code>: each gated run judged by the '
        "rules it recorded (its cases' floors, gates.yaml) against its baseline. A case under its floor fails, "
        f"whatever chance says of its change.</p>{''.join(runs)}</section>"
    )


def markdown(v: MergeVerdict, esc: Callable[[str], str]) -> list[str]:
    """The verdict as the comparison's first lines (`esc`: the Markdown escaper of kit.report.compare_view)."""
    icon = "✅" if v.passed else "❌"
    out = [f"**{icon} {esc(v.title())}**", ""]
    for r in v.runs:
        out.append(f"- {esc(r.headline)}")
        out += [f"  - {esc(p)}" for p in r.problems[:SHOWN]]
        if len(r.problems) > SHOWN:
            out.append(f"  - … {len(r.problems) - SHOWN} more: kit gate --run {esc(r.run_id)}")
    out += [f"- {esc(u)}" for u in v.others]
    return [*out, ""]
