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
