"""benchmarks/cpu_by_test.py: a one-worker run's CPU cut into tests; API requests by verb and resource."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import benchmark_module

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
cpu_by_test = benchmark_module("cpu_by_test.py")


def test_a_test_is_charged_what_every_program_spent_between_its_start_and_end() -> None:
    series = [
        (1000.0, {"kube-apiserver (main)": 1.0, "python": 2.0}),
        (1001.0, {"kube-apiserver (main)": 3.0, "python": 2.5}),
        (1003.0, {"kube-apiserver (main)": 3.5, "python": 4.0, "lws (main)": 1.0}),
        (1006.0, {"kube-apiserver (main)": 9.5, "python": 4.5, "lws (main)": 1.0}),
    ]
    timeline = {
        "t0_epoch": 1000.0,
        "workers": {
            "gw0": {
                "tests": [
                    {
                        "nodeid": "s.py::a",
                        "setup": [0.0, 0.5],
                        "call": [0.5, 2.0],
                        "teardown": [2.0, 3.2],
                        "bringups": [],
                    },
                    {
                        "nodeid": "s.py::b",
                        "setup": [3.2, 3.3],
                        "call": [3.3, 6.0],
                        "teardown": [6.0, 6.1],
                        "bringups": [],
                    },
                ]
            }
        },
    }
    a, b = sorted(cpu_by_test.per_test(series, timeline), key=lambda r: r["nodeid"])
    assert a == {
        "nodeid": "s.py::a",
        "wall_s": 3.2,
        "cpu_s": 5.5,
        "by_program": {"kube-apiserver (main)": 2.5, "python": 2.0, "lws (main)": 1.0},  # samples at 1000, 1003
    }  # a program first seen inside the test is charged all it spent
    assert b["by_program"] == {"kube-apiserver (main)": 6.0, "python": 0.5}  # 1003 -> 1006
    assert cpu_by_test.at(series, 999.0) == {}


def test_requests_are_summed_by_verb_and_resource() -> None:
    metrics = "\n".join(
        [
            "# HELP apiserver_request_total Counter of apiserver requests",
            'apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="namespace",'
            'subresource="",verb="LIST",version="v1"} 7',
            'apiserver_request_total{code="404",component="apiserver",group="",resource="pods",scope="namespace",'
            'subresource="",verb="LIST",version="v1"} 3',
            'apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="namespace",'
            'subresource="status",verb="PATCH",version="v1"} 12',
            'apiserver_request_latencies_total{verb="GET"} 99',
        ]
    )
    assert cpu_by_test.requests_by(metrics) == {"PATCH pods/status": 12, "LIST pods": 10}
