"""A cluster starved of CPU is never blamed on LWS/Kueue: the rule on doctored windows, the window
computed from doctored samples, real frozen processes, and the verdicts through pytest itself."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lws_conformance.k8s.wait import SCALE_ENV
from lws_conformance.providers import process, sampler, schedstat, starvation
from lws_conformance.providers.starvation import Limits, Window
from tests.conftest import FIXED_HANDLE

UNSCALED = Limits(starvation.FROZEN, starvation.CANARY, starvation.HARNESS_LAG)
# The worst window of the normally loaded machine (benchmarks/results/starvation-2026-12-06.md): a
# real failure (lws#688) at load 20-60 that must stay a verdict
NORMAL = Window(152.0, wait={"kube-apiserver": 436.0, "lws": 103.8}, canary=6.1, lag=2.1)
STARVED = Window(20.0, wait={"lws": 14.2, "etcd": 3.0}, canary=12.5, lag=6.0)


def test_a_starved_window_reads_as_starvation_naming_its_evidence() -> None:
    said = starvation.judge(STARVED, UNSCALED)
    assert said is not None and said.startswith(starvation.STARVED)
    assert (
        "lws waited 14.2 s for a CPU during the 20 s window (then etcd 3.0 s); "
        "API canary 12.5 s; harness woke 6.0 s late" in said
    )


def test_a_normally_loaded_window_is_not_starved() -> None:
    assert starvation.judge(NORMAL, UNSCALED) is None


@pytest.mark.parametrize(
    "window",
    [
        Window(30.0, wait={"kube-scheduler": 1.0}, frozen={"kube-scheduler": starvation.FROZEN}),
        Window(30.0, canary=starvation.CANARY),
        Window(30.0, lag=starvation.HARNESS_LAG),
    ],
    ids=["frozen", "canary", "harness-lag"],
)
def test_each_signal_alone_at_its_limit_is_starvation(window: Window) -> None:
    assert starvation.judge(window, UNSCALED) is not None


def test_run_queue_wait_alone_is_evidence_not_starvation() -> None:
    """Measured: Go's runtime threads wait ~3 s per second in a run queue at any load."""
    assert starvation.judge(Window(30.0, wait={"kube-apiserver": 90.0, "lws": 25.0}), UNSCALED) is None


def test_the_limits_are_scaled_by_timeouts_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SCALE_ENV, "2")
    assert starvation.limits() == Limits(2 * starvation.FROZEN, 2 * starvation.CANARY, 2 * starvation.HARNESS_LAG)
    just = Window(30.0, canary=starvation.CANARY * 1.5)
    assert starvation.judge(just) is None  # starved at scale 1, not at 2
    monkeypatch.setenv(SCALE_ENV, "1")
    assert starvation.judge(just) is not None


def _usage(wait: float, cpu: float = 1.0, state: str = "S") -> schedstat.Usage:
    return schedstat.Usage(cpu, wait, state)


def test_the_window_counts_the_wait_between_its_ends_and_the_frozen_time_inside() -> None:
    target = sampler.Target(None, None)
    target.ticks.extend(
        [
            sampler.Tick(100.0, {"lws": (7, _usage(1.0)), "kube-scheduler": (8, _usage(0.5))}),
            sampler.Tick(102.0, {"lws": (7, _usage(4.0)), "kube-scheduler": (8, _usage(0.5, state="T"))}),
            sampler.Tick(103.0, {"lws": (7, _usage(9.0)), "kube-scheduler": (8, _usage(0.5, state="T"))}),
            sampler.Tick(104.0, {"lws": (7, _usage(12.0)), "kueue": (9, _usage(2.0))}),  # kueue started within
            sampler.Tick(200.0, {"lws": (7, _usage(90.0))}),  # after the window
        ]
    )
    target.canary.extend([(99.0, 30.0), (101.0, 0.2), (102.5, 4.5)])
    lags = [(100.5, 9.0), (101.5, 0.1), (103.5, 2.5)]
    w = sampler.window(target, lags, 101.0, 104.0, None)
    assert w.wait == {"lws": 11.0, "kueue": 2.0}
    assert w.frozen == {"kube-scheduler": 2 * sampler.TICK * sampler.PROC_EVERY}
    assert (w.canary, w.lag, w.length) == (4.5, 2.5, 3.0)


def test_an_unanswered_canary_counts_its_age() -> None:
    target = sampler.Target(None, None)
    target.in_flight = 0.0  # sent long ago, still unanswered
    assert (sampler.window(target, [], 10.0, 20.0, None).canary or 0) > 1000


@pytest.fixture
def sleepers(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def test_a_frozen_component_is_broken_unless_a_fault_hook_stopped_it(
    tmp_path: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    """Real processes in state T: the one no fault hook stopped is named frozen, the one a fault
    hook stopped (its pid record says `stopped`) is neither read nor starved."""
    pids = tmp_path / "pids"
    free, hooked = sleepers
    process.ProcRecord("kube-scheduler", free.pid, "sleep", "/dev/null").save(pids)
    process.ProcRecord("lws", hooked.pid, "sleep", "/dev/null", stopped=True).save(pids)
    for p in sleepers:
        os.kill(p.pid, signal.SIGSTOP)
        os.waitpid(p.pid, os.WUNTRACED)  # returns once it is stopped
    target = sampler.Target(pids, None)
    for at in (10.0, 11.0, 12.0, 13.0):
        tick = sampler.read_components(pids)
        target.ticks.append(sampler.Tick(at, tick.usage))
    assert set(tick.usage) == {"kube-scheduler"} and tick.usage["kube-scheduler"][1].state == "T"
    w = sampler.window(target, [], 10.0, 12.5, None)
    said = starvation.judge(w, Limits(2.0, 99.0, 99.0)) or ""
    assert re.search(
        r"kube-scheduler waited [\d.]+ s for a CPU and stood frozen \(state T, stopped by no fault hook\) 3.0 s", said
    )
    assert "lws" not in said
    process.ProcRecord("kube-scheduler", free.pid, "sleep", "/dev/null", stopped=True).save(pids)
    assert sampler.read_components(pids).usage == {}


def test_schedstat_reads_this_process() -> None:
    got = schedstat.read(os.getpid())
    assert got is not None and got.cpu > 0 and got.wait >= 0 and got.state in "RS"
    assert schedstat.read(2**22 + 7) is None
    assert os.getpid() in schedstat.descendants([os.getppid()])


VERDICT_TESTS = """
import pytest
from lws_conformance import claims
from lws_conformance.providers import starvation
from lws_conformance.providers.starvation import Limits, Window

LIMITS = Limits(starvation.FROZEN, starvation.CANARY, starvation.HARNESS_LAG)

@pytest.fixture
def seen(request):
    window = Window(**request.param)
    request.node.stash[claims.INFRA_BROKEN] = lambda start, stop: starvation.judge(window, LIMITS)

@pytest.mark.requirement("LWS-NAME-001")
@pytest.mark.parametrize("seen", [WINDOW], indirect=True)
def test_names(seen):
    assert False, "leader pod name x-0 expected, found y-0"
"""


@pytest.mark.parametrize(
    ("window", "verdict", "says"),
    [
        ({"length": 20.0, "wait": {"lws": 14.2}, "canary": 12.5, "lag": 6.0}, "error", "starved of CPU"),
        ({"length": 152.0, "wait": {"kube-apiserver": 436.0}, "canary": 6.1, "lag": 2.1}, "failed", "found y-0"),
    ],
    ids=["starved-window-is-error", "normal-window-failure-stays-failed"],
)
def test_the_verdict_of_a_failure_in_a_starved_and_in_a_normal_window(
    pytester: pytest.Pytester, window: dict[str, object], verdict: str, says: str
) -> None:
    pytester.makeconftest(FIXED_HANDLE)
    pytester.makepyfile(test_v=VERDICT_TESTS.replace("WINDOW", repr(window)))
    out = pytester.path / "report"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "0", "--lwsc-run-id=t1", f"--lwsc-report-dir={out}")
    rows = {r["id"]: r for r in json.loads((out / "summary.json").read_text())["requirements"]}
    assert rows["LWS-NAME-001"]["verdict"] == verdict, rows["LWS-NAME-001"]
    assert says in rows["LWS-NAME-001"]["detail"]
    if verdict == "error":
        assert "lws waited 14.2 s for a CPU during the 20 s window; API canary 12.5 s" in rows["LWS-NAME-001"]["detail"]


def test_a_failure_with_another_test_s_objects_in_the_way_is_no_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """`claims.INFRA_BROKEN` of a suite test: a dead or starved component first, then the first of
    the scenario's interference checks that names something; a check that cannot read finds none."""
    from types import SimpleNamespace

    from kubernetes import client

    from lws_conformance import plugin
    from lws_conformance.scenario import Scenario

    monkeypatch.setattr(plugin.sampler, "of_process", lambda: SimpleNamespace(watch=lambda handle: None))
    dead: dict[str, str | None] = {"now": None}
    monkeypatch.setattr(plugin.health, "broken", lambda handle, start, stop: dead["now"])
    sc = Scenario(client.ApiClient(), None, "ns", None)  # type: ignore[arg-type]
    broken = plugin._infra_check(None, sc)  # type: ignore[arg-type]
    assert broken(0.0, 1.0) is None

    def unreadable() -> str | None:
        raise RuntimeError("API server gone")

    sc.interference += [lambda: None, unreadable, lambda: "GPUs taken", lambda: "never asked"]
    assert broken(0.0, 1.0) == "GPUs taken"
    dead["now"] = "kueue died"
    assert broken(0.0, 1.0) == "kueue died"
