from __future__ import annotations

from typing import Any

from lws_conformance.k8s import predicates as P


def pod(
    name: str, group: str, phase: str = "Running", ready: bool = True, gates: list[str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {P.GROUP_INDEX: group}},
        "spec": {"schedulingGates": [{"name": g} for g in gates or []]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_expected_names_start_workers_at_one() -> None:
    assert P.expected_pod_names("x", 2, 3) == {"x-0", "x-0-1", "x-0-2", "x-1", "x-1-1", "x-1-2"}
    assert P.expected_pod_names("x", 1, 1) == {"x-0"}


def test_ready_gated_and_groups() -> None:
    a, b = pod("x-0", "0"), pod("x-1", "1", phase="Pending", ready=False, gates=[P.ADMISSION_GATE])
    assert P.pod_ready(a) and not P.pod_ready(b)
    assert P.gated(b) and not P.gated(a)
    assert sorted(P.by_group([a, b])) == ["0", "1"]
    b["metadata"]["deletionTimestamp"] = "now"
    assert list(P.by_group([a, b])) == ["0"]
