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

from .invariants import State, Violation, is_leader, live, replay, rev
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


def render(events: Sequence[Event], violation: Violation | None = None, lws: str | None = None, title: str = "") -> str:
    """The SVG document for `events` (ordered), marking `violation` if given."""
    segs, wsegs, replicas, sts, end, max_g, name = _collect(events, lws)
    rows = max_g + 1
    row_h = max(10, min(26, 560 // max(rows, 1)))
    revs_seen = {s.revision for s in segs}
    h = max(TOP + rows * row_h + BOTTOM, TOP + (len(revs_seen) + 9) * 16 + 16)
    plot_w = W - LEFT - RIGHT
    span = max(end, 1e-3)

    def x(t: float) -> float:
        return LEFT + plot_w * min(max(t, 0.0), span) / span

    def y(g: float) -> float:
        return TOP + g * row_h

    revs: list[str | None] = []
    for s in segs:
        if s.revision not in revs:
            revs.append(s.revision)
    colour = {r: PALETTE[i % len(PALETTE)] for i, r in enumerate(revs)}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" '
        'font-family="sans-serif" font-size="11">',
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#555" stroke-width="2"/></pattern></defs>',
        f'<rect width="{W}" height="{h}" fill="#fff"/>',
    ]
    head = title or f"LWS {name}: {len(events)} events, {end:.1f}s"
    out.append(f'<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{escape(head)}</text>')
    if violation:
        msg = f"VIOLATION {violation.invariant} at #{violation.index} t={violation.t:.3f}s: {violation.message}"
        out.append(f'<text x="{LEFT}" y="36" fill="#c00">{escape(msg[:180])}</text>')
    # surge band: rows >= replicas, per replicas segment
    for i, (t0, r) in enumerate(replicas):
        t1 = replicas[i + 1][0] if i + 1 < len(replicas) else end
        if r <= max_g:
            out.append(
                f'<rect x="{x(t0):.1f}" y="{y(r):.1f}" width="{max(0.5, x(t1) - x(t0)):.1f}" '
                f'height="{(rows - r) * row_h}" fill="#fff4d6"/>'
            )
    for g in range(rows):
        out.append(f'<text x="{LEFT - 6}" y="{y(g) + row_h * 0.7:.1f}" text-anchor="end">group {g}</text>')
        out.append(f'<line x1="{LEFT}" y1="{y(g + 1):.1f}" x2="{LEFT + plot_w}" y2="{y(g + 1):.1f}" stroke="#eee"/>')
    bar = row_h * 0.62
    for s in segs:
        fill = "url(#hatch)" if s.state == "deleting" else colour[s.revision]
        op = "1" if s.state == "available" else ("0.35" if s.state == "unready" else "0.8")
        tip = f"group {s.group} rev {s.revision} {s.state} {s.t0:.3f}-{s.t1:.3f}s"
        out.append(
            f'<rect x="{x(s.t0):.1f}" y="{y(s.group) + 1:.1f}" width="{max(1.0, x(s.t1) - x(s.t0)):.1f}" '
            f'height="{bar:.1f}" fill="{fill}" fill-opacity="{op}" stroke="{colour[s.revision]}" '
            f'stroke-width="0.6"><title>{escape(tip)}</title></rect>'
        )
    for s in wsegs:  # thin strip under the bar: the workers
        fill = "#c00" if s.state == "mixed" else colour.get(s.revision, "#999")
        op = "1" if s.state in ("ready", "mixed") else "0.35"
        tip = f"group {s.group} workers rev {s.revision} {s.state} {s.t0:.3f}-{s.t1:.3f}s"
        out.append(
            f'<rect x="{x(s.t0):.1f}" y="{y(s.group) + bar + 2:.1f}" width="{max(1.0, x(s.t1) - x(s.t0)):.1f}" '
            f'height="{max(2.0, row_h - bar - 4):.1f}" fill="{fill}" fill-opacity="{op}">'
            f"<title>{escape(tip)}</title></rect>"
        )
    # replicas (blue) and leader StatefulSet partition (red) as step lines
    for pts, col, label in (
        (_steps([(t, r) for t, r in replicas], end), "#1f5fbf", "replicas"),
        (_steps([(t, p) for t, p, _ in sts], end), "#d62728", "partition"),
    ):
        if pts:
            path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{col}" stroke-width="1.5" '
                f'stroke-dasharray="5,3"><title>{label}</title></polyline>'
            )
    # time axis
    step = _nice(span / 8)
    t = 0.0
    while t <= span + 1e-9:
        out.append(f'<line x1="{x(t):.1f}" y1="{y(rows):.1f}" x2="{x(t):.1f}" y2="{y(rows) + 4:.1f}" stroke="#333"/>')
        out.append(f'<text x="{x(t):.1f}" y="{y(rows) + 16:.1f}" text-anchor="middle">{t:g}s</text>')
        t += step
    if violation:
        vx = x(violation.t)
        out.append(
            f'<line x1="{vx:.1f}" y1="{TOP - 6}" x2="{vx:.1f}" y2="{y(rows):.1f}" stroke="#c00" stroke-width="2"/>'
        )
        for g in violation.groups:
            if g < rows:
                out.append(
                    f'<circle cx="{vx:.1f}" cy="{y(g) + row_h / 2:.1f}" r="{row_h / 2:.1f}" fill="none" '
                    'stroke="#c00" stroke-width="2.5"/>'
                )
    # legend
    lx, ly = W - RIGHT + 16, TOP
    items: list[tuple[str, str]] = [(colour[r], f"revision {r}") for r in revs]
    for i, (col, label) in enumerate(items):
        out.append(f'<rect x="{lx}" y="{ly + i * 16}" width="12" height="12" fill="{col}"/>')
        out.append(f'<text x="{lx + 18}" y="{ly + i * 16 + 10}">{escape(str(label))}</text>')
    ly += len(items) * 16 + 8
    extra = [
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
    ]
    for i, (shape, label) in enumerate(extra):
        out.append(f'<g transform="translate({lx},{ly + i * 16})">{shape}</g>')
        out.append(f'<text x="{lx + 18}" y="{ly + i * 16 + 10}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out)


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
