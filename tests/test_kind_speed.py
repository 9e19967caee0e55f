"""The pure part of benchmarks/kind_speed.py: a kind bring-up's phases from lwsc's progress lines."""

from __future__ import annotations

import time

from tests.conftest import benchmark_module

kind_speed = benchmark_module("kind_speed.py")


def test_bring_up_phases_are_the_gaps_between_lwsc_progress_lines() -> None:
    start = time.mktime((2026, 12, 6, 13, 39, 10, 0, 0, -1))
    lines = [
        "[13:39:17] cluster: kind cluster 'k' (nodes in containers; ...)",
        "[13:39:20] creating kind cluster 'k' on the harness's private Docker engine",
        "[13:40:24] kind cluster 'k': pod network, nodes Ready",
        "something else",
        "[13:43:35] installing LWS v0.9.0 and Kueue v0.17.0",
        "[13:47:48] kind cluster 'k' up in 511s",
    ]
    assert kind_speed.phases(lines, "k", start) == {"images": 10, "create": 64, "network": 191, "controllers": 253}
    assert kind_speed.phases(lines[:3], "k", start) == {"images": 10, "create": 64}  # a bring-up that failed


def test_wait_and_window_seconds_are_read_from_the_allure_steps_they_head() -> None:
    steps = [
        {"name": "create LWS", "start": 0, "stop": 100},
        {"name": "wait up to 60s for LWS: Available", "start": 100, "stop": 2100, "steps": [{"name": "x"}]},
        {
            "name": "roll",
            "start": 2100,
            "stop": 9000,
            "steps": [
                {"name": "observe for 10s that no violation occurs", "start": 2100, "stop": 7100},
                {"name": "wait up to 30s for pods: Ready", "start": 7100, "stop": 8600},
            ],
        },
    ]
    out: dict[str, float] = {}
    kind_speed.step_seconds(steps, out)
    assert out == {"wait": 3.5, "window": 5.0}


def test_pod_latencies_are_the_gaps_between_a_pods_first_marks() -> None:
    def ev(t: float, etype: str, **obj: object) -> dict[str, object]:
        return {"t": t, "type": etype, "kind": "Pod", "obj": {"uid": "u1", **obj}}

    events = [
        ev(1.0, "ADDED"),
        {"t": 1.1, "type": "ADDED", "kind": "LeaderWorkerSet", "obj": {"uid": "l"}},
        ev(1.5, "MODIFIED", node="n1"),
        ev(3.5, "MODIFIED", node="n1", phase="Running"),
        ev(3.5, "MODIFIED", node="n1", phase="Running", ready=True),
        ev(9.0, "MODIFIED", node="n1", phase="Running", ready=True, deleting=True),
        ev(10.0, "MODIFIED", node="n1", phase="Running", deleting=True),
        ev(11.25, "DELETED", node="n1", deleting=True),
        {"t": 2.0, "type": "ADDED", "kind": "Pod", "obj": {"uid": "u2"}},  # never scheduled
    ]
    assert kind_speed.pod_latencies(events) == {
        "created → scheduled": [0.5],
        "scheduled → Running": [2.0],
        "Running → Ready": [0.0],
        "deleted → gone": [2.25],
    }


def test_an_allure_result_names_its_pytest_node() -> None:
    test = {"fullName": "suites.lws.test_identity#test_names", "name": "test_names[r2]"}
    assert kind_speed._nodeid(test) == "suites/lws/test_identity.py::test_names[r2]"
