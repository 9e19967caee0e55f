"""Rolling updates of a Kueue-managed LWS (kueue-behaviour.md §3.4, §3.7; regression kueue#8769).

Why this matters: a rollout recreates every pod. Each recreated pod comes back behind the admission
gate and must be released under its group's existing admission, or the rollout hangs (kueue#8769:
surge pods stuck SchedulingGated, fixed by kueue PR #8801, in v0.17.0). Surge groups are extra
groups, so they need their own Workloads (and quota), which must go away once the rollout is done.
Throughout, the number of pods Kueue lets through must stay within the ClusterQueue's quota.
"""

from __future__ import annotations

from typing import Any

import kueue_helpers as K
import pytest

from lws_conformance import workloads
from lws_conformance.k8s import predicates as P
from lws_conformance.k8s.wait import wait_for
from lws_conformance.providers.base import ClusterHandle
from lws_conformance.scenario import Scenario

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
OLD, NEW = "registry.k8s.io/nginx-slim:0.27", "registry.k8s.io/nginx-slim:0.26"


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
    """Change only the image of every container (a change Kueue allows on a managed LWS, §3.3).

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


def _settled(replicas: int) -> Any:
    def check(lws: Obj) -> bool:
        st = lws.get("status") or {}
        return (
            st.get("observedGeneration") == lws["metadata"]["generation"]
            and st.get("updatedReplicas") == replicas
            and st.get("readyReplicas") == replicas
            and st.get("replicas") == replicas
            and P.condition(lws, "Available") == "True"
        )

    return check


@pytest.mark.requirement("KUEUE-UPDATE-001")
def test_rolling_update_without_surge_completes_within_quota(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """Quota for exactly the LWS's groups; every released pod is watched against it during the rollout."""
    replicas, size = 2, 2
    gpu = lwsc_cluster.topology.gpu_resource
    quota = replicas * size
    K.plain_queue(scenario, unique, {"cpu": "100", "memory": "100Gi", gpu: str(quota)})
    scenario.create(_lws("ru", lwsc_cluster, replicas, size, max_surge=0))
    scenario.wait_pods(K.all_ready(replicas, size), "both groups Ready", selector=K.selector("ru"))

    peak: dict[str, Any] = {"gpus": 0, "pods": ""}
    done = _rolled(replicas, size)

    def check(pods: list[Obj]) -> Any:
        released = [p for p in P.live(pods) if not P.gated(p)]
        used = sum(K.gpus(p, gpu) for p in released)
        if used > peak["gpus"]:
            peak.update(gpus=used, pods=" ".join(sorted(p["metadata"]["name"] for p in released)))
        return done(pods)

    wait_for(
        scenario.api,
        scenario.core.list_namespaced_pod,
        K.act_then_wait(lambda: _update_image(scenario, "ru"), check),
        what=f"pods of {scenario.namespace}/ru",
        condition=f"every pod on {NEW}, ungated and Ready",
        timeout=60,
        diagnose=scenario.diagnose,
        namespace=scenario.namespace,
        label_selector=K.selector("ru"),
    )
    assert peak["gpus"] <= quota, f"{peak['gpus']} {gpu} released during the rollout, quota {quota}: {peak['pods']}"
    scenario.wait_lws("ru", _settled(replicas), "rollout finished: updated == ready == replicas, Available")
    uid = K.lws_uid(scenario, "ru")
    names = {workloads.lws_workload_name("ru", uid, i) for i in range(replicas)}
    K.wait_workloads(
        scenario,
        uid,
        lambda ws: set(K.by_name(ws)) == names and all(map(K.admitted, ws)),
        "the same Workloads, Admitted",
    )


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

    wait_for(
        scenario.api,
        K.list_workloads_fn(scenario),
        K.act_then_wait(lambda: _update_image(scenario, "rs"), check),
        what=f"Workloads of {scenario.namespace}/rs",
        condition=f"surge Workloads {sorted(surge_names)} created, then gone, leaving {sorted(steady)}",
        timeout=60,
        diagnose=scenario.diagnose,
        **K.workload_kwargs(scenario, uid),
    )
    assert all(seen.values()), f"surge Workloads never admitted although quota covered them: {seen}"
    scenario.wait_pods(_rolled(replicas, size), f"every pod on {NEW} and Ready", selector=K.selector("rs"))
    scenario.wait_lws("rs", _settled(replicas), "rollout finished: updated == ready == replicas, Available")
    K.wait_workloads(
        scenario, uid, lambda ws: set(K.by_name(ws)) == steady and all(map(K.admitted, ws)), "steady Workloads Admitted"
    )
