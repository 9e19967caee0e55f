"""Where a run's time went: one row per xdist worker, each test a bar of its phases (pure).

Input: what the plugin recorded per test — its worker, the start and stop of its setup, call and
teardown phases (epoch seconds), and the private-cluster bring-ups that happened during its setup.
Output: `summarize` (the data summary.json carries as `run_timeline`) and `svg` (the picture the
HTML report shows). The *critical path* is the chain of tests on the worker that finished last:
the run cannot end before that worker's work does, so shortening any other test does not shorten
the run.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any

PHASES = ("setup", "call", "teardown")
COLOURS = {"setup": "#9ecae1", "call": "#3182bd", "teardown": "#c6dbef", "bringup": "#fd8d3c"}


@dataclass
class Entry:
    nodeid: str
    worker: str
    phases: dict[str, list[float]] = field(default_factory=dict)  # phase -> [start, stop]
    bringups: list[list[float]] = field(default_factory=list)  # [start, stop] of private clusters
    location: str = ""  # file:line of the test function

    @property
    def start(self) -> float:
        return min(v[0] for v in self.phases.values())

    @property
    def stop(self) -> float:
        return max(v[1] for v in self.phases.values())


def summarize(entries: list[Entry]) -> dict[str, Any]:
    """Per worker: tests in order, busy seconds; the run's span; the critical path."""
    entries = [e for e in entries if e.phases]
    if not entries:
        return {"workers": {}, "critical_path": [], "span_s": 0.0}
    t0 = min(e.start for e in entries)
    by_worker: dict[str, list[Entry]] = {}
    for e in sorted(entries, key=lambda e: e.start):
        by_worker.setdefault(e.worker, []).append(e)
    last = max(by_worker, key=lambda w: by_worker[w][-1].stop)
    workers = {
        w: {
            "busy_s": round(sum(x.stop - x.start for x in es), 2),
            "end_s": round(es[-1].stop - t0, 2),
            "bringup_s": round(sum(b[1] - b[0] for x in es for b in x.bringups), 2),
            "tests": [
                {
                    "nodeid": x.nodeid,
                    **{p: [round(x.phases[p][0] - t0, 3), round(x.phases[p][1] - t0, 3)] for p in x.phases},
                    "bringups": [[round(b[0] - t0, 3), round(b[1] - t0, 3)] for b in x.bringups],
                }
                for x in es
            ],
        }
        for w, es in sorted(by_worker.items())
    }
    path = sorted(by_worker[last], key=lambda e: e.stop - e.start, reverse=True)
    return {
        "t0_epoch": round(t0, 3),  # what every offset below counts from
        "span_s": round(max(e.stop for e in entries) - t0, 2),
        "critical_worker": last,
        "workers": workers,
        "critical_path": [{"nodeid": e.nodeid, "seconds": round(e.stop - e.start, 2)} for e in path],
    }


def svg(summary: dict[str, Any], width: int = 1100) -> str:
    """Rows of bars per worker (setup, call, teardown; bring-ups in orange), the critical worker's
    row outlined; each bar's tooltip names the test and its seconds."""
    workers = summary.get("workers") or {}
    span = max(float(summary.get("span_s") or 0.0), 1e-6)
    left, row_h, top = 70, 26, 30
    scale = (width - left - 10) / span
    height = top + row_h * max(len(workers), 1) + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        f'font-size="11"><title>run timeline</title>',
        f'<text x="4" y="16">run timeline: {span:.0f} s; critical path: worker '
        f"{html.escape(str(summary.get('critical_worker', '-')))} (outlined)</text>",
    ]
    for i, (w, info) in enumerate(workers.items()):
        y = top + i * row_h
        out.append(f'<text x="4" y="{y + 15}">{html.escape(w)}</text>')
        if w == summary.get("critical_worker"):
            out.append(
                f'<rect x="{left - 2}" y="{y - 2}" width="{width - left - 6}" height="{row_h}" fill="none" '
                'stroke="#d62728" stroke-width="2"/>'
            )
        for t in info["tests"]:
            name = html.escape(t["nodeid"])
            for p in PHASES:
                if p not in t:
                    continue
                a, b = t[p]
                out.append(
                    f'<rect x="{left + a * scale:.1f}" y="{y}" width="{max((b - a) * scale, 0.5):.1f}" '
                    f'height="{row_h - 6}" fill="{COLOURS[p]}"><title>{name} {p} {b - a:.2f} s</title></rect>'
                )
            for a, b in t.get("bringups", []):
                out.append(
                    f'<rect x="{left + a * scale:.1f}" y="{y + row_h - 9}" width="{max((b - a) * scale, 0.5):.1f}" '
                    f'height="4" fill="{COLOURS["bringup"]}"><title>private cluster bring-up {b - a:.1f} s '
                    f"({name})</title></rect>"
                )
    axis_y = top + row_h * max(len(workers), 1) + 14
    for s in range(0, int(span) + 1, max(10, int(span // 10) // 10 * 10 or 10)):
        out.append(f'<text x="{left + s * scale:.1f}" y="{axis_y}">{s}s</text>')
    out.append("</svg>")
    return "\n".join(out)


def to_dicts(entries: list[Entry]) -> list[dict[str, Any]]:
    return [asdict(e) for e in entries]
