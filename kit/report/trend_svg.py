"""One trend chart: the pass rate of like runs (same source, agent and case set), each point labelled by
its model id and git sha. The layout is computed from the labels, so none overlaps another or is cut."""

from __future__ import annotations

import math
from html import escape
from typing import Any

CHAR_W = 7.0  # an upper bound of one character's advance at 12px in the page's fonts
STEP = 34  # px between points: rotated labels need STEP * sin(ANGLE) above the 12px line height
ANGLE = 50  # degrees the x labels are turned
MAX_LABEL = 42  # characters; longer labels end in an ellipsis (the full text is in the point's tooltip)


def point_label(p: dict[str, Any]) -> str:
    model = str(p.get("model") or "no model")
    sha = str(p.get("git_sha") or "")[:7]
    label = f"{model} @ {sha}" if sha else model
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def render(points: list[dict[str, Any]], *, title: str) -> str:
    shown = [p for p in points if p.get("pass_rate") is not None]
    if not shown:
        return '<p class="none">No runs with results in this series.</p>'
    labels = [point_label(p) for p in shown]
    longest = max(len(s) for s in labels) * CHAR_W
    sin, cos = math.sin(math.radians(ANGLE)), math.cos(math.radians(ANGLE))
    top, plot_h, axis_w = 14, 110, 44
    # A label hangs down-left from its point: the first one needs room to the left, all of them below.
    left = axis_w + max(0.0, longest * cos - 8)
    bottom = longest * sin + 24
    width = left + STEP * max(len(shown) - 1, 0) + 60
    height = top + plot_h + bottom
    parts = [
        f'<svg class="trend" role="img" aria-label="{escape(title, quote=True)}" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}">'
    ]
    for v in (0, 0.5, 1):
        y = top + (1 - v) * plot_h
        parts.append(
            f'<line x1="{axis_w}" y1="{y:.1f}" x2="{width - 20:.0f}" y2="{y:.1f}" stroke="#e3e3e3"/>'
            f'<text class="axis" x="{axis_w - 6}" y="{y + 4:.1f}" text-anchor="end">{v:.0%}</text>'
        )
    xy = [(left + i * STEP, top + (1 - float(p["pass_rate"])) * plot_h) for i, p in enumerate(shown)]
    if len(xy) > 1:
        parts.append(
            '<polyline fill="none" stroke="#1565c0" stroke-width="2" points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            + '"/>'
        )
    base = top + plot_h + 14
    for (x, y), p, label in zip(xy, shown, labels, strict=True):
        rate = float(p["pass_rate"])
        color = "#2e7d32" if rate == 1 else ("#c62828" if (p.get("status") or "complete") != "complete" else "#1565c0")
        tip = (
            f"{p['run_id']}: {rate:.1%} of {p.get('runs')} case runs passed; model {p.get('model') or '-'}, "
            f"git {p.get('git_sha') or '-'}, {str(p.get('started_at'))[:19]}, {p.get('status') or 'complete'}"
        )
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill="{color}"><title>{escape(tip)}</title></circle>'
            f'<text class="label" x="{x:.1f}" y="{base:.1f}" text-anchor="end" '
            f'transform="rotate(-{ANGLE} {x:.1f} {base:.1f})">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
