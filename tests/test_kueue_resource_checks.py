"""The checks of suites/kueue/resource_helpers.py against doctored evidence: a Workload admitted in
the wrong or in mixed flavors, a pod without its flavor's nodeSelector or on another flavor's
node, a pod without its flavor's toleration or given one for a flavor taint, a preempted Workload.
Each is what a broken Kueue would leave behind (the mutants kueue-40..48 produce them on a
cluster); the correct evidence passes."""

from __future__ import annotations

from typing import Any

import pytest

from suites.kueue import resource_helpers as R

Obj = dict[str, Any]
BLOCK = "cloud.provider.com/topology-block"


class _Scenario:
    """Only what node_label_failures reads: node name -> labels."""

    def __init__(self, nodes: dict[str, dict[str, str]]) -> None:
        self._nodes = nodes

    def node_labels(self) -> dict[str, dict[str, str]]:
        return self._nodes


def _wl(assignments: dict[str, str], conditions: list[Obj] | None = None) -> Obj:
    psas = [{"name": ps, "flavors": {"cpu": f, "nvidia.com/gpu": f}} for ps, f in assignments.items()]
    return {
        "metadata": {"name": "leaderworkerset-fl-0-abcde"},
        "status": {"admission": {"podSetAssignments": psas}, "conditions": conditions or []},
    }


def _pod(name: str, node: str, selector: dict[str, str] | None, tolerations: list[Obj] | None = None) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": node, "nodeSelector": selector, "tolerations": tolerations or []},
    }


NODES = _Scenario({"gpu-b1-r1-n1": {BLOCK: "b1"}, "gpu-b2-r1-n1": {BLOCK: "b2"}})


def test_a_group_admitted_whole_in_its_flavor_passes_and_a_wrong_or_mixed_one_fails() -> None:
    assert R.assigned_whole(_wl({"leader": "a", "worker": "a"}), "a") is None
    wrong = R.assigned_whole(_wl({"leader": "b", "worker": "b"}), "a")
    assert wrong and "not a for every podSet" in wrong
    assert R.assigned_whole(_wl({"leader": "a", "worker": "b"}), "a")
    assert R.assigned_whole({"metadata": {"name": "w"}, "status": {}}, "a"), "no admission is no assignment"


def test_node_labels_missing_from_the_selector_or_the_node_are_each_a_failure() -> None:
    labels = {BLOCK: "b1"}
    assert R.node_label_failures(NODES, [_pod("p0", "gpu-b1-r1-n1", labels)], "a", labels) == []
    no_selector = R.node_label_failures(NODES, [_pod("p0", "gpu-b1-r1-n1", None)], "a", labels)
    assert len(no_selector) == 1 and "without the flavor's nodeLabels" in no_selector[0]
    elsewhere = R.node_label_failures(NODES, [_pod("p0", "gpu-b2-r1-n1", None)], "a", labels)
    assert len(elsewhere) == 2 and "runs on node gpu-b2-r1-n1" in elsewhere[1]


@pytest.mark.parametrize(
    "given, ok",
    [
        ([{"key": "lwsc.x-k8s.io/t-a", "operator": "Exists", "effect": "NoSchedule"}], True),
        ([], False),
        ([{"key": "lwsc.x-k8s.io/t-b", "operator": "Exists", "effect": "NoSchedule"}], False),
        ([{"key": "lwsc.x-k8s.io/t-a", "operator": "Exists", "effect": "NoExecute"}], False),
    ],
)
def test_the_flavor_toleration_must_be_there_exactly(given: list[Obj], ok: bool) -> None:
    want = R.toleration("lwsc.x-k8s.io/t-a")
    assert R.has_toleration(_pod("p0", "n", None, given), want) is ok


def test_a_toleration_of_the_flavor_taint_given_to_a_group_is_seen() -> None:
    key = "lwsc.x-k8s.io/t"
    pod = _pod("p0", "n", None, [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}])
    assert R.tolerations_of_key(pod, key) == []
    pod["spec"]["tolerations"].append(R.toleration(key, "reserved"))
    assert R.tolerations_of_key(pod, key) == [R.toleration(key, "reserved")]


def test_preempted_reads_the_condition() -> None:
    assert not R.was_preempted(_wl({"leader": "a"}))
    assert not R.was_preempted(_wl({"leader": "a"}, [{"type": "Preempted", "status": "False"}]))
    assert R.was_preempted(_wl({"leader": "a"}, [{"type": "Preempted", "status": "True"}]))


def test_cluster_queue_lists_flavors_in_order_with_their_limits() -> None:
    cq = R.cluster_queue(
        "cq",
        [
            R.flavor_quota("a", {"nvidia.com/gpu": "2"}, borrowing={"nvidia.com/gpu": "1"}),
            R.flavor_quota("b", {"nvidia.com/gpu": "3"}),
        ],
        cohort="c",
        fungibility={"whenCanBorrow": "TryNextFlavor"},
    )
    group = cq["spec"]["resourceGroups"][0]
    assert [f["name"] for f in group["flavors"]] == ["a", "b"]
    assert group["flavors"][0]["resources"] == [{"name": "nvidia.com/gpu", "nominalQuota": "2", "borrowingLimit": "1"}]
    assert cq["spec"]["cohortName"] == "c" and cq["spec"]["flavorFungibility"] == {"whenCanBorrow": "TryNextFlavor"}
