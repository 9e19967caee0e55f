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


def _lws(generation: int, observed: int | None, ready: int = 2, available: str = "True") -> dict[str, Any]:
    status: dict[str, Any] = {
        "replicas": 2,
        "readyReplicas": ready,
        "updatedReplicas": 2,
        "conditions": [{"type": "Available", "status": available}],
    }
    if observed is not None:
        status["observedGeneration"] = observed
    return {"metadata": {"generation": generation}, "status": status}


def test_lws_settled_requires_observed_generation_from_v0_9_0() -> None:
    """LWS v0.9.0+ writes status.observedGeneration: a missing one is status not yet written for
    this generation (a weak check accepted it as current); a stale one is rejected everywhere."""
    for versions in ({"lws": "v0.9.0"}, {"lws": "v0.10.0"}, None, {}):
        check = P.lws_settled(2, versions=versions)
        assert check(_lws(2, 2))
        assert not check(_lws(2, None)), f"missing observedGeneration accepted on {versions}"
        assert not check(_lws(2, 1)), "stale observedGeneration accepted"
    assert P.lws_settled(2)(_lws(3, 3)) and not P.lws_settled(2)(_lws(3, None))  # default: strict


def test_lws_settled_on_lws_before_v0_9_0() -> None:
    """v0.8.0 has no status.observedGeneration: its absence cannot fail the check, but a present
    one is still compared exactly, and the counts and Available still decide."""
    check = P.lws_settled(2, versions={"lws": "v0.8.0"})
    assert check(_lws(2, None))
    assert not check(_lws(2, 1))
    assert not check(_lws(2, None, ready=1))
    assert not check(_lws(2, None, available="False"))
    assert not P.lws_has_observed_generation({"lws": "v0.8.0"})
    assert P.lws_has_observed_generation({"lws": "v0.9.0"}) and P.lws_has_observed_generation(None)


def test_domains_and_exclusive_placement() -> None:
    nodes = {"n1": {"rack": "r1"}, "n2": {"rack": "r1"}, "n3": {"rack": "r2"}, "n4": {}}

    def pod(group: str, node: str) -> dict[str, Any]:
        return {"metadata": {"labels": {"g": group}}, "spec": {"nodeName": node}}

    placed = P.domains([pod("0", "n1"), pod("0", "n2"), pod("1", "n3")], nodes, "rack", "g")
    assert placed == {"0": {"r1"}, "1": {"r2"}}
    assert P.one_domain_each(placed) == ({}, {})
    assert P.domains([pod("2", "n4")], nodes, "rack", "g") == {"2": {"<n4 has no rack>"}}
    split, shared = P.one_domain_each({10: {"r1"}, 2: {"r1"}, 3: {"r2", "r1"}, 4: {"r2"}})
    assert split == {3: ["r1", "r2"]}
    assert shared == {"r1": [2, 10]}  # keys in their own order, not as strings
