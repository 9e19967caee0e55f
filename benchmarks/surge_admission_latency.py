"""Measure how long Kueue takes to admit an LWS surge group's Workload once the group's pods
exist: the controller latency KUEUE-UPDATE-003's window (`test_percentage_max_surge_rollout_completes`)
is derived from. Integer maxSurge 1, where Kueue does create the surge Workload (with "50%" it
never does on the affected versions, kueue PR #14405, so the window is always paid there).

Run: .venv/bin/python benchmarks/surge_admission_latency.py [--rounds 10]

Per round: a Kueue-managed LWS (2 groups of 2, maxSurge 1, quota for 3 groups) is created and
Ready, its template updated; two watches (pods, Workloads) record when the surge group's first
pod and its Admitted Workload were first seen (client-side, monotonic clock). Latency = Admitted
seen - surge pod seen. Uses its own cluster name and port range.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

from kubernetes import client, watch

from lws_conformance import workloads
from lws_conformance.k8s import predicates as P
from lws_conformance.k8s.client import api_client
from lws_conformance.k8s.wait import wait_for
from lws_conformance.profile import load_profile
from lws_conformance.providers.local import LocalCluster

GROUP, VERSION = workloads.KUEUE_GROUP, workloads.KUEUE_VERSION


def _watch(fn: Any, seen: dict[str, float], key: Any, found: threading.Event, stop: threading.Event, **kw: Any) -> None:
    """Record when `key(object)` first names an object; `found` is set then."""
    w = watch.Watch()
    try:
        for ev in w.stream(fn, timeout_seconds=120, **kw):
            k = key(ev["object"])
            if k and k not in seen:
                seen[k] = time.monotonic()
                found.set()
            if stop.is_set():
                w.stop()
    except Exception:  # noqa: BLE001  (the stream ends when the namespace or the cluster goes away)
        return


def one_round(api: client.ApiClient, profile: Any, i: int) -> float:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    ns, cq, name = f"surge-{i}", f"surge-cq-{i}", "s"
    core.create_namespace({"metadata": {"name": ns}})
    gpu = profile.topology.gpu_resource
    custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "clusterqueues",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", gpu],
                        "flavors": [
                            {
                                "name": profile.kueue_flavor_name,
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "100"},
                                    {"name": "memory", "nominalQuota": "100Gi"},
                                    {"name": gpu, "nominalQuota": "6"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
    )
    custom.create_namespaced_custom_object(
        GROUP,
        VERSION,
        ns,
        "localqueues",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "LocalQueue",
            "metadata": {"name": "lq"},
            "spec": {"clusterQueue": cq},
        },
    )
    obj = workloads.lws(name, replicas=2, size=2, gpus=1, gpu_resource=gpu, queue="lq")
    obj["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 1},
    }
    custom.create_namespaced_custom_object("leaderworkerset.x-k8s.io", "v1", ns, "leaderworkersets", obj)
    (st,) = wait_for(
        api,
        custom.list_namespaced_custom_object,
        lambda objs: [o for o in objs if (o.get("status") or {}).get("readyReplicas") == 2] or None,
        what=f"LWS {ns}/{name}",
        condition="2 groups Ready",
        timeout=120,
        group="leaderworkerset.x-k8s.io",
        version="v1",
        namespace=ns,
        plural="leaderworkersets",
    )
    uid = st["metadata"]["uid"]
    surge_wl = workloads.lws_workload_name(name, uid, 2)
    pods: dict[str, float] = {}
    wls: dict[str, float] = {}
    stop, pod_seen, wl_seen = threading.Event(), threading.Event(), threading.Event()

    def surge_pod(pod: Any) -> str | None:
        return "surge" if (pod.metadata.labels or {}).get("leaderworkerset.sigs.k8s.io/group-index") == "2" else None

    def surge_admitted(wl: dict[str, Any]) -> str | None:
        return "admitted" if wl["metadata"]["name"] == surge_wl and P.condition(wl, "Admitted") == "True" else None

    wl_kwargs = {"group": GROUP, "version": VERSION, "namespace": ns, "plural": "workloads"}
    threads = [
        threading.Thread(
            target=_watch,
            args=(core.list_namespaced_pod, pods, surge_pod, pod_seen, stop),
            kwargs={"namespace": ns},
            daemon=True,
        ),
        threading.Thread(
            target=_watch,
            args=(custom.list_namespaced_custom_object, wls, surge_admitted, wl_seen, stop),
            kwargs=wl_kwargs,
            daemon=True,
        ),
    ]
    for t in threads:
        t.start()
    time.sleep(0.5)  # let both watches open
    lwt = st["spec"]["leaderWorkerTemplate"]
    lwt["workerTemplate"]["metadata"] = {"annotations": {"bench": str(i)}}
    custom.patch_namespaced_custom_object(
        "leaderworkerset.x-k8s.io",
        "v1",
        ns,
        "leaderworkersets",
        name,
        {"spec": {"leaderWorkerTemplate": {"workerTemplate": lwt["workerTemplate"]}}},
    )
    deadline = time.monotonic() + 60
    for seen in (pod_seen, wl_seen):
        seen.wait(max(0.0, deadline - time.monotonic()))
    stop.set()
    core.delete_namespace(ns)
    custom.delete_cluster_custom_object(GROUP, VERSION, "clusterqueues", cq)
    if not ("surge" in pods and "admitted" in wls):
        raise RuntimeError(f"round {i}: surge pod seen {'surge' in pods}, Workload admitted {'admitted' in wls}")
    return max(0.0, wls["admitted"] - pods["surge"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--profile", default="default", help="the profile measured (default: default)")
    args = ap.parse_args()
    profile = load_profile(args.profile, ["network.base_port=17500"])
    cluster = LocalCluster(profile, name="bench-surge")
    handle = cluster.up(lambda m: print(m, flush=True))
    api = api_client(handle.kubeconfig)
    try:
        lat = [one_round(api, profile, i) for i in range(args.rounds)]
    finally:
        api.close()
        cluster.down()
    lat.sort()
    print(
        f"surge Workload Admitted after its first pod, {len(lat)} rounds: "
        f"median {statistics.median(lat):.3f} s, max {lat[-1]:.3f} s, all {[round(x, 3) for x in lat]}"
    )


if __name__ == "__main__":
    main()
