"""Rolling updates of a Kueue-managed LWS (pkg/controller/jobs/leaderworkerset@v0.17.0; regression kueue#8769).

Why this matters: a rollout recreates every pod. Each recreated pod comes back behind the admission
gate and must be released under its group's existing admission, or the rollout hangs (kueue#8769:
surge pods stuck SchedulingGated, fixed by kueue PR #8801, in v0.17.0). Surge groups are extra
groups, so they need their own Workloads (and quota), which must go away once the rollout is done.
Throughout, the number of pods Kueue lets through must stay within the ClusterQueue's quota.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import (
    ClusterHandle,
    Scenario,
    artifact_dir,
    history,
    images,
    record,
    saved,
    workloads,
)
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
OLD, NEW = images.ref("workload"), images.ref("workload-update")


def _lws(name: str, cluster: ClusterHandle, replicas: int, size: int, max_surge: int) -> Obj:
    obj = workloads.lws(
        name, replicas=replicas, size=size, gpus=1, gpu_resource=cluster.topology.gpu_resource, queue=K.QUEUE
    )
    obj["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": max_surge},
    }
    return obj


def _update_image(scenario: Scenario, name: str) -> None:
    """Change only the image of every container (a change Kueue allows on a managed LWS:
    validateImmutablePodTemplateSpec@v0.17.0).

    A merge patch replaces lists whole, so the current containers are sent back with the new image.
    """
    lwt = scenario.lws(name)["spec"]["leaderWorkerTemplate"]
    body: Obj = {}
    for key in ("leaderTemplate", "workerTemplate"):
        containers = [{**c, "image": NEW} for c in lwt[key]["spec"]["containers"]]
        body[key] = {"spec": {"containers": containers}}
    scenario.patch_lws(name, {"spec": {"leaderWorkerTemplate": body}})


def _rolled(replicas: int, size: int) -> Any:
    ready = K.all_ready(replicas, size)

    def check(pods: list[Obj]) -> Any:
        live = ready(pods)
        return live if live and all(p["spec"]["containers"][0]["image"] == NEW for p in live) else None

    return check


def _one_gpu_per_pod(scenario: Scenario, name: str, gpu: str) -> None:
    """Both templates request exactly 1 `gpu` per pod (limits = requests), so a pod costs 1."""
    lwt = scenario.lws(name)["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        assert K.gpus(lwt[key], gpu) == 1, f"{name} {key} must request 1 {gpu} per pod: {lwt[key]['spec']}"


def _workload_of(uids: dict[str, str]) -> Any:
    """Pod snapshot -> the name of its group's Workload (from the LWS name and group index labels)."""

    def workload(pod: Obj) -> str | None:
        labels = pod.get("labels") or {}
        lws, idx = labels.get(K.NAME_LABEL), labels.get(P.GROUP_INDEX)
        return workloads.lws_workload_name(lws, uids[lws], int(idx)) if lws in uids and idx is not None else None

    return workload


def _check_workloads_after(scenario: Scenario, waiting_uid: str, size: int) -> None:
    """The waiting LWS still holds no quota, and every Workload covers one group of `size` pods
    (what the replay charged it: `size` pods at 1 GPU)."""
    (waiting,) = K.workloads_of(scenario, waiting_uid)
    assert not K.quota_reserved(waiting), "the waiting LWS got quota while the rolled LWS held all of it"
    for wl in scenario.list_objects("Workload"):
        pods = sum(ps["count"] for ps in wl["spec"]["podSets"])
        assert pods == size, f"Workload {wl['metadata']['name']} covers {pods} pods, charged {size}"


@pytest.mark.requirement("KUEUE-UPDATE-001")
def test_rolling_update_without_surge_completes_within_quota(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, tmp_path: Path
) -> None:
    """Quota for exactly the LWS's groups, and a second LWS waiting in the same queue, so an
    over-admission has something to let through. With maxSurge 0 the LWS's own pod names are
    exactly its quota, so its pods alone can never show one: what is checked, at every watch event
    of the rollout (pods and Workloads of both, in resourceVersion order), is that the pods
    released from the gate (terminating ones included: they are on their nodes until gone) and the
    Workloads holding quota (QuotaReserved) fit the quota, and that every released pod's Workload
    holds quota."""
    replicas, size = 2, 2
    gpu = lwsc_cluster.topology.gpu_resource
    quota = replicas * size
    K.plain_queue(scenario, unique, {"cpu": "100", "memory": "100Gi", gpu: str(quota)})
    scenario.create(_lws("ru", lwsc_cluster, replicas, size, max_surge=0))
    scenario.wait_pods(K.all_ready(replicas, size), "both groups Ready", selector=K.selector("ru"))
    scenario.create(_lws("wt", lwsc_cluster, 1, size, max_surge=0))
    scenario.wait_pods(K.split(1, size, ready=0), "the second LWS wholly held (queue full)", selector=K.selector("wt"))
    uids = {n: K.lws_uid(scenario, n) for n in ("ru", "wt")}
    K.wait_pending(scenario, uids["wt"], workloads.lws_workload_name("wt", uids["wt"], 0))
    for n in uids:
        _one_gpu_per_pod(scenario, n, gpu)

    with record(scenario.api, scenario.namespace) as tl:
        scenario.wait_objects(
            "Pod",
            K.act_then_wait(lambda: _update_image(scenario, "ru"), _rolled(replicas, size)),
            f"every pod on {NEW}, ungated and Ready",
            timeout=60,
            selector=K.selector("ru"),
            what=f"pods of {scenario.namespace}/ru",
        )
        scenario.wait_lws("ru", scenario.settled(replicas), "rollout finished: updated == ready == replicas, Available")
    events = saved(tl, artifact_dir(tmp_path), "ru", lws="ru")
    wrong = history.quota_violations(events, quota, lambda pod: 1, lambda wl: size, _workload_of(uids))
    timeline = artifact_dir(tmp_path) / "ru.timeline.json"
    assert not wrong, f"{gpu} quota {quota} exceeded during the rollout: {wrong} (timeline: {timeline})"
    names = {workloads.lws_workload_name("ru", uids["ru"], i) for i in range(replicas)}
    K.wait_workloads(
        scenario,
        uids["ru"],
        lambda ws: set(K.by_name(ws)) == names and all(map(K.admitted, ws)),
        "the same Workloads, Admitted",
    )
    _check_workloads_after(scenario, uids["wt"], size)


@pytest.mark.requirement("KUEUE-UPDATE-002")
def test_rolling_update_with_surge_gets_and_drops_surge_workloads(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """maxSurge 1 with quota for replicas + 1 groups (kueue#8769): the surge group is admitted under
    its own Workload (index `replicas`), the rollout completes, and that Workload is deleted."""
    replicas, size, surge = 2, 2, 1
    gpu = lwsc_cluster.topology.gpu_resource
    quota = (replicas + surge) * size
    K.plain_queue(scenario, unique, {"cpu": "100", "memory": "100Gi", gpu: str(quota)})
    scenario.create(_lws("rs", lwsc_cluster, replicas, size, max_surge=surge))
    scenario.wait_pods(K.all_ready(replicas, size), "both groups Ready", selector=K.selector("rs"))
    uid = K.lws_uid(scenario, "rs")
    steady = {workloads.lws_workload_name("rs", uid, i) for i in range(replicas)}
    surge_names = {workloads.lws_workload_name("rs", uid, replicas + i) for i in range(surge)}

    seen: dict[str, bool] = {}  # surge Workload name -> was it ever Admitted

    def check(wls: list[Obj]) -> Any:
        current = K.by_name(wls)
        for name in surge_names & set(current):
            seen[name] = seen.get(name, False) or K.admitted(current[name])
        if set(seen) == surge_names and set(current) == steady:
            return current
        return None

    scenario.wait_objects(
        "Workload",
        K.act_then_wait(lambda: _update_image(scenario, "rs"), check),
        f"surge Workloads {sorted(surge_names)} created, then gone, leaving {sorted(steady)}",
        timeout=60,
        selector=K.workload_selector(uid),
        what=f"Workloads of {scenario.namespace}/rs",
    )
    assert all(seen.values()), f"surge Workloads never admitted although quota covered them: {seen}"
    scenario.wait_pods(_rolled(replicas, size), f"every pod on {NEW} and Ready", selector=K.selector("rs"))
    scenario.wait_lws("rs", scenario.settled(replicas), "rollout finished: updated == ready == replicas, Available")
    K.wait_workloads(
        scenario, uid, lambda ws: set(K.by_name(ws)) == steady and all(map(K.admitted, ws)), "steady Workloads Admitted"
    )
