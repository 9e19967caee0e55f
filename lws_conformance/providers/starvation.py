"""Was the cluster under test starved of CPU while a test ran? Then its failure is no verdict.

A test's window (its phase's start to its end) is judged on what `sampler` saw during it: how
long each component process of the cluster waited in a run queue for a CPU or stood frozen (state
`T`, stopped by nobody's fault hook), how slow the API server answered a cheap GET (the canary),
and how late the harness's own ticker woke (a harness that got no CPU reads its watches late).
Any one of them beyond its limit makes the window starved: the test's failures read `error`
naming the figures, never `failed`. The limits sit between the worst window of passing tests on
a normally loaded machine and the windows of a run whose cluster was starved
(benchmarks/starvation.py, docs/verdicts.md); they are scaled by `timeouts.scale` here and
nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..k8s.wait import scale

STARVED = "InfraError: the cluster under test was starved of CPU (not an LWS/Kueue verdict)"

# Seconds, at timeouts.scale 1 (benchmarks/results/starvation-2026-12-06.md).
COMPONENT_WAIT = 8.0  # one component's run-queue wait plus frozen time within the window
CANARY = 5.0  # the slowest API-server canary GET of the window
HARNESS_LAG = 3.0  # the latest the harness's ticker woke within the window


@dataclass(frozen=True)
class Window:
    """What the sampler saw of one cluster during one test's window (seconds)."""

    length: float
    wait: dict[str, float] = field(default_factory=dict)  # component -> run-queue wait
    cpu: dict[str, float] = field(default_factory=dict)  # component -> CPU time
    frozen: dict[str, float] = field(default_factory=dict)  # component -> time seen in state T
    canary: float | None = None  # slowest API GET; None when no canary answered or ran
    lag: float = 0.0  # latest wake of the harness's ticker

    def unavailable(self, component: str) -> float:
        """How long `component` wanted a CPU and got none, or stood frozen."""
        return self.wait.get(component, 0.0) + self.frozen.get(component, 0.0)


@dataclass(frozen=True)
class Limits:
    component: float
    canary: float
    lag: float


def limits() -> Limits:
    """The measured limits, scaled by the run's `timeouts.scale` (the one place they are)."""
    s = scale()
    return Limits(COMPONENT_WAIT * s, CANARY * s, HARNESS_LAG * s)


def judge(window: Window, lim: Limits | None = None) -> str | None:
    """None when the window shows no starvation; else the InfraError message naming the evidence."""
    lim = lim or limits()
    worst = max(window.wait.keys() | window.frozen.keys(), key=window.unavailable, default=None)
    over = [
        worst is not None and window.unavailable(worst) >= lim.component,
        window.canary is not None and window.canary >= lim.canary,
        window.lag >= lim.lag,
    ]
    if not any(over):
        return None
    said = f"limits: component {lim.component:.1f} s, canary {lim.canary:.1f} s, harness {lim.lag:.1f} s"
    return f"{STARVED}: {describe(window)} ({said})"


def describe(window: Window) -> str:
    """The window's evidence in one line, the most deprived component first."""
    ranked = sorted(window.wait.keys() | window.frozen.keys(), key=window.unavailable, reverse=True)
    head = "no component process was sampled"
    if ranked:
        name = ranked[0]
        head = f"{name} waited {window.wait.get(name, 0.0):.1f} s for a CPU"
        if window.frozen.get(name):
            head += f" and stood frozen (state T, stopped by no fault hook) {window.frozen[name]:.1f} s"
    head += f" during the {window.length:.0f} s window"
    if others := [f"{n} {window.unavailable(n):.1f} s" for n in ranked[1:3]]:
        head += f" (then {', '.join(others)})"
    canary = "not sampled" if window.canary is None else f"{window.canary:.1f} s"
    return f"{head}; API canary {canary}; harness woke {window.lag:.1f} s late"
