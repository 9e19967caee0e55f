"""Draw a DisaggregatedSet rollout as SVG text: one panel per role, time across.

In each panel, one colour per revision: its LWS's spec.replicas (dashed step line) and its ready
groups (solid step line), so a reader sees every role's old revision drain while the new one grows,
and whether the roles moved together. Each violation is a red vertical line; the messages are listed
on top (every one, in order).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from .disagg import DsState, ready_groups, replay, replicas
from .invariants import Violation
from .timeline import DS_REVISION, Event

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948")
W, LEFT, RIGHT, PANEL, GAP, TOP = 1000, 70, 170, 120, 30, 50

Series = dict[tuple[str, str, str], list[tuple[float, int]]]  # (role, revision, spec|ready) -> points


def _ready_of(st: DsState, role: str, revision: str) -> int:
    view = DsState(
        st.ds_name, st.ds, {k: v for k, v in st.lws.items() if v["labels"].get(DS_REVISION) == revision}, st.pods
    )
    return ready_groups(view, role)


def _collect(events: Sequence[Event], ds_name: str) -> tuple[list[str], list[str], Series, float]:
    series: Series = {}
    roles: list[str] = []
    revisions: list[str] = []
    end = 0.0
    for st in replay(events, ds_name):
        assert st.event is not None
        t = end = st.event.t
        roles = list(st.roles()) or roles
        revisions = list(st.revisions)
        for snap in st.lws.values():
            role, rev = snap["labels"].get("disaggregatedset.x-k8s.io/role", "?"), snap["labels"].get(DS_REVISION, "?")
            for what, value in (("spec", replicas(snap)), ("ready", _ready_of(st, role, rev))):
                pts = series.setdefault((role, rev, what), [])
                if not pts or pts[-1][1] != value:
                    pts.append((t, value))
        for (role, rev, _what), pts in series.items():  # deleted LWSs drop to 0
            if not st.of(role, rev) and pts[-1][1] != 0:
                pts.append((t, 0))
    return roles, revisions, series, max(end, 1e-3)


def render(events: Sequence[Event], ds_name: str, violations: Sequence[Violation] = (), title: str = "") -> str:
    roles, revisions, series, end = _collect(events, ds_name)
    top = max([1] + [v for pts in series.values() for _, v in pts])
    head_top = TOP + 14 * max(len(violations) - 1, 0)  # one line per violation above the panels
    height = head_top + len(roles) * (PANEL + GAP) + 30

    def x(t: float) -> float:
        return LEFT + (W - LEFT - RIGHT) * t / end

    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}"'
    out = [svg + ' font-family="sans-serif" font-size="11">']
    head = title or f"DisaggregatedSet {ds_name}: replicas (dashed) and ready groups (solid) per role and revision"
    out.append(f'<text x="{LEFT}" y="18" font-size="13">{escape(head)}</text>')
    for n, v in enumerate(violations):
        out.append(f'<text x="{LEFT}" y="{36 + 14 * n}" fill="#c00">{escape(v.describe()[:160])}</text>')
    for i, role in enumerate(roles):
        y0 = head_top + i * (PANEL + GAP)

        def y(v: int, y0: float = y0) -> float:
            return y0 + PANEL - PANEL * v / top

        out.append(
            f'<rect x="{LEFT}" y="{y0}" width="{W - LEFT - RIGHT}" height="{PANEL}" fill="#f7f7f7" stroke="#ccc"/>'
        )
        out.append(f'<text x="8" y="{y0 + PANEL / 2}" font-weight="bold">{escape(role)}</text>')
        out.append(f'<text x="{LEFT - 6}" y="{y0 + 10}" text-anchor="end">{top}</text>')
        for j, rev in enumerate(revisions):
            colour = PALETTE[j % len(PALETTE)]
            for what, dash in (("spec", ' stroke-dasharray="5,3"'), ("ready", "")):
                pts = series.get((role, rev, what))
                if not pts:
                    continue
                path = [f"M{x(pts[0][0]):.1f},{y(pts[0][1]):.1f}"]
                for (_t0, v0), (t1, v1) in zip(pts, pts[1:] + [(end, pts[-1][1])], strict=True):
                    path.append(f"L{x(t1):.1f},{y(v0):.1f}")
                    if t1 < end:
                        path.append(f"L{x(t1):.1f},{y(v1):.1f}")
                out.append(f'<path d="{" ".join(path)}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
            out.append(
                f'<text x="{W - RIGHT + 8}" y="{y0 + 14 + 14 * j}" fill="{colour}">revision {escape(rev)}</text>'
            )
    for v in violations:
        out.append(f'<line x1="{x(v.t):.1f}" y1="{head_top}" x2="{x(v.t):.1f}" y2="{height - 30}" stroke="#c00"/>')
    out.append(f'<text x="{LEFT}" y="{height - 10}">0 s</text>')
    out.append(f'<text x="{W - RIGHT}" y="{height - 10}" text-anchor="end">{end:.1f} s</text>')
    out.append("</svg>")
    return "\n".join(out)


def save(path: Path, events: Sequence[Event], ds_name: str, violations: Sequence[Violation] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(events, ds_name, violations))
    return path
