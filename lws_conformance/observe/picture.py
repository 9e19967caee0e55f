"""Draw a rollout timeline as SVG text (no plotting dependency): one row per group, time across.

What a reader should see at a glance: which revision each group ran when (colour), whether it
was available (solid) or not (pale) or being deleted (hatched), its workers' revision (thin
strip, red when workers of another revision are still live next to the leader), surge indices (>= replicas, on a
tinted band), the leader StatefulSet partition and replicas over time (dashed lines), and the
violation (a red line at its time, red rings on its groups, its message in the title).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from .invariants import Violation
from .replay import State, is_leader, live, replay, rev
from .timeline import Event

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#e15759")
W, LEFT, RIGHT, TOP, BOTTOM = 1100, 80, 230, 56, 44


@dataclass
class _Seg:
    group: int
    t0: float
    t1: float
    revision: str | None
    state: str  # available | unready | deleting


def _group_state(st: State, g: int) -> tuple[str | None, str] | None:
    pods = st.group_pods.get(g, {})
    v = st.views.get(g)
    if v is not None and v.leader is not None:
        return v.revision, "available" if v.available else "unready"
    leaders = [p for p in pods.values() if not live(p)]
    if leaders or pods:
        some = leaders[0] if leaders else next(iter(pods.values()))
        return rev(some), "deleting"
    return None


def _workers_state(st: State, g: int) -> tuple[str | None, str] | None:
    """The strip under a group: its live workers' revision ("mixed" when they differ from each
    other or from the live leader)."""
    workers = [p for p in st.group_pods.get(g, {}).values() if not is_leader(p) and live(p)]
    if not workers:
        return None
    revs = {rev(p) for p in workers}
    v = st.views.get(g)
    if len(revs) > 1 or (v is not None and v.leader is not None and revs != {v.revision}):
        return None, "mixed"
    return next(iter(revs)), "ready" if all(p.get("ready") for p in workers) else "unready"


def _collect(
    events: Sequence[Event], lws: str | None
) -> tuple[list[_Seg], list[_Seg], list[tuple[float, int]], list[tuple[float, int, int]], float, int, str]:
    segs: list[_Seg] = []
    wsegs: list[_Seg] = []
    open_: dict[int, tuple[float, tuple[str | None, str]]] = {}
    wopen: dict[int, tuple[float, tuple[str | None, str]]] = {}
    replicas: list[tuple[float, int]] = []
    sts: list[tuple[float, int, int]] = []
    now, max_g, name = 0.0, 0, lws or ""
    for st in replay(events, lws):
        ev = st.event
        assert ev is not None
        name = st.lws_name
        now = max(now, ev.t)
        if st.params and (not replicas or replicas[-1][1] != st.params.replicas):
            replicas.append((now, st.params.replicas))
        if ev.kind == "StatefulSet" and st.leader_sts is ev.obj and st.leader_sts is not None:
            spec = st.leader_sts.get("spec") or {}
            point = (now, int(spec.get("partition") or 0), int(spec.get("replicas") or 0))
            if not sts or sts[-1][1:] != point[1:]:
                sts.append(point)
        for g in st.touched:
            max_g = max(max_g, g)
            for state_fn, track, out in ((_group_state, open_, segs), (_workers_state, wopen, wsegs)):
                cur = state_fn(st, g)
                prev = track.get(g)
                if prev and prev[1] == cur:
                    continue
                if prev:
                    out.append(_Seg(g, prev[0], now, prev[1][0], prev[1][1]))
                    del track[g]
                if cur:
                    track[g] = (now, cur)
    end = now + max(0.5, now * 0.02)
    for track, out in ((open_, segs), (wopen, wsegs)):
        for g, (t0, (r, s)) in track.items():
            out.append(_Seg(g, t0, end, r, s))
    for _, n in replicas:
        max_g = max(max_g, n - 1)
    return segs, wsegs, replicas, sts, end, max_g, name


@dataclass(frozen=True)
class _Canvas:
    """The drawing's geometry: `rows` group rows of `row_h` pixels, time 0..`span` across."""

    rows: int
    row_h: int
    span: float
    height: int

    @property
    def plot_w(self) -> float:
        return W - LEFT - RIGHT

    def x(self, t: float) -> float:
        return LEFT + self.plot_w * min(max(t, 0.0), self.span) / self.span

    def y(self, g: float) -> float:
        return TOP + g * self.row_h


_LEGEND = (
    ('<rect width="12" height="12" fill="#888"/>', "available (solid)"),
    ('<rect width="12" height="12" fill="#888" fill-opacity="0.35"/>', "live, not available"),
    ('<rect width="12" height="12" fill="url(#hatch)"/>', "being deleted"),
    ('<rect y="8" width="12" height="4" fill="#888"/>', "strip: workers' revision"),
    ('<rect y="8" width="12" height="4" fill="#c00"/>', "strip: workers mixed / != leader"),
    ('<rect width="12" height="12" fill="#fff4d6" stroke="#ccc"/>', "surge (index >= replicas)"),
    (
        '<line x1="0" y1="6" x2="12" y2="6" stroke="#d62728" stroke-dasharray="4,2" stroke-width="2"/>',
        "leader STS partition",
    ),
    (
        '<line x1="0" y1="6" x2="12" y2="6" stroke="#1f5fbf" stroke-dasharray="4,2" stroke-width="2"/>',
        "spec.replicas",
    ),
    ('<line x1="6" y1="0" x2="6" y2="12" stroke="#c00" stroke-width="2"/>', "violation"),
)


def render(events: Sequence[Event], violation: Violation | None = None, lws: str | None = None, title: str = "") -> str:
    """The SVG document for `events` (ordered), marking `violation` if given."""
    segs, wsegs, replicas, sts, end, max_g, name = _collect(events, lws)
    rows = max_g + 1
    row_h = max(10, min(26, 560 // max(rows, 1)))
    revs = list(dict.fromkeys(s.revision for s in segs))  # in order of appearance
    height = max(TOP + rows * row_h + BOTTOM, TOP + (len(revs) + 9) * 16 + 16)
    c = _Canvas(rows, row_h, max(end, 1e-3), height)
    colour = {r: PALETTE[i % len(PALETTE)] for i, r in enumerate(revs)}
    head = title or f"LWS {name}: {len(events)} events, {end:.1f}s"
    return "\n".join(
        [
            *_frame(c, head, violation),
            *_surge_band(c, replicas, end),
            *_group_rows(c),
            *_group_bars(c, segs, wsegs, colour),
            *_step_lines(c, replicas, sts, end),
            *_time_axis(c),
            *(_violation_marks(c, violation) if violation else []),
            *_legend(revs, colour),
            "</svg>",
        ]
    )


def _frame(c: _Canvas, head: str, violation: Violation | None) -> list[str]:
    """The document's opening, background, hatch pattern, title and the violation's message."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{c.height}" viewBox="0 0 {W} {c.height}" '
        'font-family="sans-serif" font-size="11">',
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#555" stroke-width="2"/></pattern></defs>',
        f'<rect width="{W}" height="{c.height}" fill="#fff"/>',
        f'<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{escape(head)}</text>',
    ]
    if violation:
        msg = f"VIOLATION {violation.invariant} at #{violation.index} t={violation.t:.3f}s: {violation.message}"
        out.append(f'<text x="{LEFT}" y="36" fill="#c00">{escape(msg[:180])}</text>')
    return out


def _surge_band(c: _Canvas, replicas: list[tuple[float, int]], end: float) -> list[str]:
    """Rows >= spec.replicas tinted, per stretch of time with one replicas value."""
    out = []
    for i, (t0, r) in enumerate(replicas):
        t1 = replicas[i + 1][0] if i + 1 < len(replicas) else end
        if r < c.rows:
            out.append(
                f'<rect x="{c.x(t0):.1f}" y="{c.y(r):.1f}" width="{max(0.5, c.x(t1) - c.x(t0)):.1f}" '
                f'height="{(c.rows - r) * c.row_h}" fill="#fff4d6"/>'
            )
    return out


def _group_rows(c: _Canvas) -> list[str]:
    out = []
    for g in range(c.rows):
        out.append(f'<text x="{LEFT - 6}" y="{c.y(g) + c.row_h * 0.7:.1f}" text-anchor="end">group {g}</text>')
        out.append(
            f'<line x1="{LEFT}" y1="{c.y(g + 1):.1f}" x2="{LEFT + c.plot_w}" y2="{c.y(g + 1):.1f}" stroke="#eee"/>'
        )
    return out


def _group_bars(c: _Canvas, segs: list[_Seg], wsegs: list[_Seg], colour: dict[str | None, str]) -> list[str]:
    """Each group's bar (its leader's revision and state) and, under it, its workers' strip."""
    out = []
    bar = c.row_h * 0.62
    for s in segs:
        fill = "url(#hatch)" if s.state == "deleting" else colour[s.revision]
        op = "1" if s.state == "available" else ("0.35" if s.state == "unready" else "0.8")
        tip = f"group {s.group} rev {s.revision} {s.state} {s.t0:.3f}-{s.t1:.3f}s"
        out.append(
            f'<rect x="{c.x(s.t0):.1f}" y="{c.y(s.group) + 1:.1f}" width="{max(1.0, c.x(s.t1) - c.x(s.t0)):.1f}" '
            f'height="{bar:.1f}" fill="{fill}" fill-opacity="{op}" stroke="{colour[s.revision]}" '
            f'stroke-width="0.6"><title>{escape(tip)}</title></rect>'
        )
    for s in wsegs:
        fill = "#c00" if s.state == "mixed" else colour.get(s.revision, "#999")
        op = "1" if s.state in ("ready", "mixed") else "0.35"
        tip = f"group {s.group} workers rev {s.revision} {s.state} {s.t0:.3f}-{s.t1:.3f}s"
        out.append(
            f'<rect x="{c.x(s.t0):.1f}" y="{c.y(s.group) + bar + 2:.1f}" '
            f'width="{max(1.0, c.x(s.t1) - c.x(s.t0)):.1f}" '
            f'height="{max(2.0, c.row_h - bar - 4):.1f}" fill="{fill}" fill-opacity="{op}">'
            f"<title>{escape(tip)}</title></rect>"
        )
    return out


def _step_lines(
    c: _Canvas, replicas: list[tuple[float, int]], sts: list[tuple[float, int, int]], end: float
) -> list[str]:
    """spec.replicas (blue) and the leader StatefulSet's partition (red) as dashed step lines."""
    out = []
    for pts, col, label in (
        (_steps(list(replicas), end), "#1f5fbf", "replicas"),
        (_steps([(t, p) for t, p, _ in sts], end), "#d62728", "partition"),
    ):
        if pts:
            path = " ".join(f"{c.x(t):.1f},{c.y(v):.1f}" for t, v in pts)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{col}" stroke-width="1.5" '
                f'stroke-dasharray="5,3"><title>{label}</title></polyline>'
            )
    return out


def _time_axis(c: _Canvas) -> list[str]:
    out = []
    step = _nice(c.span / 8)
    t, base = 0.0, c.y(c.rows)
    while t <= c.span + 1e-9:
        out.append(f'<line x1="{c.x(t):.1f}" y1="{base:.1f}" x2="{c.x(t):.1f}" y2="{base + 4:.1f}" stroke="#333"/>')
        out.append(f'<text x="{c.x(t):.1f}" y="{base + 16:.1f}" text-anchor="middle">{t:g}s</text>')
        t += step
    return out


def _violation_marks(c: _Canvas, violation: Violation) -> list[str]:
    """A red line at the violation's time, a red ring on each of its groups."""
    vx = c.x(violation.t)
    out = [f'<line x1="{vx:.1f}" y1="{TOP - 6}" x2="{vx:.1f}" y2="{c.y(c.rows):.1f}" stroke="#c00" stroke-width="2"/>']
    for g in violation.groups:
        if g < c.rows:
            out.append(
                f'<circle cx="{vx:.1f}" cy="{c.y(g) + c.row_h / 2:.1f}" r="{c.row_h / 2:.1f}" fill="none" '
                'stroke="#c00" stroke-width="2.5"/>'
            )
    return out


def _legend(revs: list[str | None], colour: dict[str | None, str]) -> list[str]:
    """One swatch per revision, then what the shapes mean."""
    out = []
    lx, ly = W - RIGHT + 16, TOP
    for i, r in enumerate(revs):
        out.append(f'<rect x="{lx}" y="{ly + i * 16}" width="12" height="12" fill="{colour[r]}"/>')
        out.append(f'<text x="{lx + 18}" y="{ly + i * 16 + 10}">{escape(f"revision {r}")}</text>')
    ly += len(revs) * 16 + 8
    for i, (shape, label) in enumerate(_LEGEND):
        out.append(f'<g transform="translate({lx},{ly + i * 16})">{shape}</g>')
        out.append(f'<text x="{lx + 18}" y="{ly + i * 16 + 10}">{escape(label)}</text>')
    return out


def _steps(points: list[tuple[float, int]], end: float) -> list[tuple[float, int]]:
    out: list[tuple[float, int]] = []
    for i, (t, v) in enumerate(points):
        if i:
            out.append((t, points[i - 1][1]))
        out.append((t, v))
    if points:
        out.append((end, points[-1][1]))
    return out


def _nice(raw: float) -> float:
    for base in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300):
        if raw <= base:
            return base
    return 600.0


def save(
    path: Path, events: Sequence[Event], violation: Violation | None = None, lws: str | None = None, title: str = ""
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(events, violation, lws, title))
    return path
