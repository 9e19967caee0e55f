"""Was the cluster under test starved of CPU while a test ran? Then its failure is no verdict.

A test's window (its phase's start to its end) is judged on what `sampler` saw during it: a
component process of the cluster standing frozen (state `T`, stopped by no fault hook), the API
server answering a cheap GET slowly (the canary), the harness's own ticker waking late (a harness
that gets no CPU reads its watches late). Any one of them at or beyond its limit makes the window
starved: the test's failures read `error` naming the figures, never `failed`. Each component's
run-queue wait is named as evidence but not judged: measured, Go's runtime threads accumulate
~0.5-3 s of it per second of wall clock under any load, starved or not, so it separates nothing.
The limits sit above the worst window of a normally loaded machine, real failures included
(benchmarks/starvation.py, docs/verdicts.md); they are scaled by `timeouts.scale` here and
nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..k8s.wait import scale

STARVED = "InfraError: the cluster under test was starved of CPU (not an LWS/Kueue verdict)"

# Seconds, at timeouts.scale 1 (benchmarks/results/starvation-2026-12-06.md: worst normal window
# canary 6.1 s, harness lag 2.1 s, no component ever frozen).
FROZEN = 3.0  # one component seen frozen within the window (three 1 s samples)
CANARY = 10.0  # the slowest API-server canary GET of the window (an unanswered one: its age)
HARNESS_LAG = 5.0  # the latest the harness's 0.5 s ticker woke within the window


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
        """How long `component` wanted a CPU and got none, or stood frozen (ranks the evidence)."""
        return self.wait.get(component, 0.0) + self.frozen.get(component, 0.0)


@dataclass(frozen=True)
class Limits:
    frozen: float
    canary: float
    lag: float


def limits() -> Limits:
    """The measured limits, scaled by the run's `timeouts.scale` (the one place they are)."""
    s = scale()
    return Limits(FROZEN * s, CANARY * s, HARNESS_LAG * s)


def judge(window: Window, lim: Limits | None = None) -> str | None:
    """None when the window shows no starvation; else the InfraError message naming the evidence."""
    lim = lim or limits()
    over = [
        max(window.frozen.values(), default=0.0) >= lim.frozen,
        window.canary is not None and window.canary >= lim.canary,
        window.lag >= lim.lag,
    ]
    if not any(over):
        return None
    said = f"limits: frozen {lim.frozen:.1f} s, canary {lim.canary:.1f} s, harness {lim.lag:.1f} s"
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
