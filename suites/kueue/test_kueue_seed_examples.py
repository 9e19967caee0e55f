"""The two LeaderWorkerSet examples of Kueue's "Run LeaderWorkerSet" page, run as the page gives them.

Why this matters: users copy these manifests. The page promises that (1) a group of pods is one
unit of admission represented by a Workload, so the LWS scales group by group and a new group
stays behind a scheduling gate until its Workload is admitted, and (2) with
`podset-required-topology` + the same `podset-group-name` on both templates, each replica's leader
and workers share one rack, while different replicas may use different racks.

The manifests in fixtures/manifests/kueue-seed-*.yaml are verbatim; the only adaptations are the
image (the cluster's substitute or mirror of the page's nginx-slim, as for every suite) and the
nvidia.com/gpu limit the rack example lacks (see the note in kueue-seed-tas.yaml). The queues the
page assumes (`user-queue`, `tas-user-queue`) are created per test under those names.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from lws_conformance.testing import ClusterHandle, Scenario, images, workloads

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
NAME = "nginx-leaderworkerset"  # as on the page
REPLICAS, SIZE = 2, 3  # as on the page


def _seed(file: str) -> Obj:
    # images through the cluster's substitutes / mirror (a kind node holds no nginx-slim)
    obj: Obj = images.rewrite(yaml.safe_load((workloads.MANIFESTS / file).read_text()))
    assert obj["metadata"]["name"] == NAME and obj["spec"]["replicas"] == REPLICAS
    assert obj["spec"]["leaderWorkerTemplate"]["size"] == SIZE
    return obj


def _with_extended_limits(obj: Obj) -> Obj:
    """The one adaptation: extended-resource requests get an equal limit (the apiserver requires it)."""
    out = copy.deepcopy(obj)
    for key in ("leaderTemplate", "workerTemplate"):
        for c in out["spec"]["leaderWorkerTemplate"][key]["spec"]["containers"]:
            res = c.get("resources") or {}
            ext = {k: v for k, v in (res.get("requests") or {}).items() if "/" in k}
            if ext:
                res["limits"] = {**(res.get("limits") or {}), **ext}
    return out


def _group_cpu_millis(obj: Obj) -> int:
    lwt = obj["spec"]["leaderWorkerTemplate"]
    size: int = lwt["size"]

    def cpu(key: str) -> int:
        return sum(K.cpu_millis(c["resources"]["requests"]["cpu"]) for c in lwt[key]["spec"]["containers"])

    return cpu("leaderTemplate") + (size - 1) * cpu("workerTemplate")


@pytest.mark.requirement("KUEUE-SEED-001")
def test_seed_plain_example_admits_and_scales_group_by_group(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """Quota for exactly the example's two groups; scaling to 3 leaves the new group gated until
    quota for it appears, then it is admitted whole."""
    obj = _seed("kueue-seed-plain.yaml")
    group = _group_cpu_millis(obj)
    K.plain_queue(scenario, unique, {"cpu": f"{REPLICAS * group}m"}, queue="user-queue")
    scenario.create(obj)

    scenario.wait_pods(K.all_ready(REPLICAS, SIZE), "both groups Ready", selector=K.selector(NAME))
    uid = K.lws_uid(scenario, NAME)
    names = {workloads.lws_workload_name(NAME, uid, i) for i in range(REPLICAS)}
    K.wait_workloads(
        scenario, uid, lambda ws: set(K.by_name(ws)) == names and all(map(K.admitted, ws)), "one Admitted per group"
    )

    scenario.patch_lws(NAME, {"spec": {"replicas": REPLICAS + 1}})
    scenario.wait_pods(
        K.split(REPLICAS + 1, SIZE, ready=REPLICAS), "the new group wholly gated", selector=K.selector(NAME)
    )
    K.wait_pending(scenario, uid, workloads.lws_workload_name(NAME, uid, REPLICAS))
    escaped = scenario.observe_pods(K.leak(REPLICAS), K.OBSERVE_SECONDS, selector=K.selector(NAME))
    assert escaped is None, escaped

    K.set_quota(scenario, unique, {"cpu": f"{(REPLICAS + 1) * group}m"})
    scenario.wait_pods(K.all_ready(REPLICAS + 1, SIZE), "the new group admitted whole", selector=K.selector(NAME))


@pytest.mark.requirement("KUEUE-SEED-002")
@pytest.mark.exclusive(K.SHARED_NODES_TAS)
def test_seed_rack_example_colocates_each_replica_in_one_rack(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    t = lwsc_cluster.topology
    obj = _with_extended_limits(_seed("kueue-seed-tas.yaml"))
    worker = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    page_level = worker["metadata"]["annotations"][workloads.TAS_REQUIRED]
    if page_level != t.rack_label:
        pytest.skip(f"the page's rack label {page_level} is not this cluster's ({t.rack_label})")
    K.tas_queue(scenario, lwsc_cluster, unique, K.roomy(t), queue="tas-user-queue")
    scenario.create(obj)

    pods = scenario.wait_pods(K.all_ready(REPLICAS, SIZE), "both groups placed and Ready", selector=K.selector(NAME))
    racks = K.racks_of(scenario, lwsc_cluster, pods)
    spread = {i: sorted(r) for i, r in racks.items() if len(r) != 1}
    assert not spread, f"a replica's leader and workers are not in one rack: {spread}"
    uid = K.lws_uid(scenario, NAME)
    wls = K.wait_workloads(
        scenario, uid, lambda ws: len(ws) == REPLICAS and all(map(K.admitted, ws)) and ws, "all Admitted"
    )
    for wl in wls:
        assert K.topology_assigned(wl) == ["leader", "worker"], f"{wl['metadata']['name']}: no topologyAssignment"
