"""Measure how long Kueue takes to reserve quota for a required-rack TAS group that fits: the
controller latency the admission window of KUEUE-TAS-007/008/012/013 (`kueue_helpers.ADMISSION_SECONDS`,
`test_kueue_tas._wait_quota`) is derived from.

Run: .venv/bin/python benchmarks/tas_admission_latency.py [--rounds 10]

The suites' shape (test_kueue_tas._placed_in_one_rack, KUEUE-TAS-012's hosts): a rack of three
kwok Nodes of this benchmark's own (4, 1 and 2 cpus, labelled and tainted so only its pods land
there), a Topology of that label and the hostname, a flavor of those Nodes, a roomy ClusterQueue.
Per round, in a namespace of its own: a leader and four workers of 1 cpu each, one podset group,
required in the rack. A watch of the namespace's Workloads records when the group's Workload was
first seen and when it was first seen with QuotaReserved=True (client side, monotonic clock):
latency = the second minus the first. Uses its own cluster name and port range.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from kubernetes import client, watch

from lws_conformance import workloads
from lws_conformance.k8s import predicates as P
from lws_conformance.k8s.client import api_client
from lws_conformance.k8s.wait import wait_for
from lws_conformance.profile import load_profile
from lws_conformance.providers import nodes
from lws_conformance.providers.local import LocalCluster

GROUP, VERSION = workloads.KUEUE_GROUP, workloads.KUEUE_VERSION
SLOTS = "lwsc.x-k8s.io/pod-slots"
HOSTS = {"a4": "4", "b1": "1", "c2": "2"}


def _setup(api: client.ApiClient, profile: Any) -> None:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    t = profile.topology
    for h, cpu in HOSTS.items():
        body = nodes.node_manifest(t, f"bench-{h}", "", "")
        labels = body["metadata"]["labels"]
        for key in (nodes.POOL_LABEL[0], t.block_label, t.rack_label):
            labels.pop(key, None)
        labels[SLOTS] = "bench"
        body["spec"]["taints"] = [{"key": SLOTS, "value": "bench", "effect": "NoSchedule"}]
        capacity = {"cpu": cpu, "memory": "256Gi", "pods": "10"}
        body["status"]["capacity"] = body["status"]["allocatable"] = capacity
        core.create_node(body)
        core.patch_node_status(body["metadata"]["name"], {"status": body["status"]})
    wait_for(
        api,
        core.list_node,
        lambda ns: ns if len(ns) == len(HOSTS) and all(P.condition(n, "Ready") == "True" for n in ns) else None,
        what="the benchmark's Nodes",
        condition="Ready",
        timeout=60,
        label_selector=SLOTS,
    )
    quota = {"cpu": "100", "memory": "100Gi"}
    for plural, obj in (
        ("topologies", workloads.topology("bench-slots", [SLOTS, t.hostname_label])),
        ("resourceflavors", workloads.resource_flavor("bench-rf", {SLOTS: "bench"}, "bench-slots")),
        ("clusterqueues", workloads.cluster_queue("bench-cq", "bench-rf", quota)),
    ):
        custom.create_cluster_custom_object(GROUP, VERSION, plural, obj)


def one_round(api: client.ApiClient, i: int) -> float:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    ns = f"tas-{i}"
    core.create_namespace({"metadata": {"name": ns}})
    custom.create_namespaced_custom_object(GROUP, VERSION, ns, "localqueues", workloads.local_queue("lq", "bench-cq"))
    obj = workloads.set_tas(workloads.lws("lf", replicas=1, size=5, queue="lq"), SLOTS)
    toleration = {"key": SLOTS, "operator": "Equal", "value": "bench", "effect": "NoSchedule"}
    for role in ("leader", "worker"):
        workloads.set_requests(obj, role, {"cpu": "1"})
        obj["spec"]["leaderWorkerTemplate"][f"{role}Template"]["spec"]["tolerations"] = [toleration]
    seen: dict[str, float] = {}
    w = watch.Watch()
    rv = custom.list_namespaced_custom_object(GROUP, VERSION, ns, "workloads")["metadata"]["resourceVersion"]
    custom.create_namespaced_custom_object("leaderworkerset.x-k8s.io", "v1", ns, "leaderworkersets", obj)
    stream = w.stream(
        custom.list_namespaced_custom_object, GROUP, VERSION, ns, "workloads", resource_version=rv, timeout_seconds=60
    )
    for ev in stream:
        now = time.monotonic()
        seen.setdefault("created", now)
        if P.condition(ev["object"], "QuotaReserved") == "True":
            seen["reserved"] = now
            w.stop()
    core.delete_namespace(ns)
    wait_for(  # the namespace gone, its Workload with it: Kueue's TAS usage of the rack freed
        api,
        core.list_namespace,
        lambda objs: [True] if not objs else None,
        what=f"namespace {ns}",
        condition="deleted",
        timeout=120,
        field_selector=f"metadata.name={ns}",
    )
    if "reserved" not in seen:
        raise RuntimeError(f"round {i}: the Workload never got quota within 60 s")
    return seen["reserved"] - seen["created"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--profile", default="default", help="the profile measured (default: default)")
    args = ap.parse_args()
    profile = load_profile(args.profile, ["network.base_port=17600"])
    cluster = LocalCluster(profile, name="bench-tas")
    handle = cluster.up(lambda m: print(m, flush=True))
    api = api_client(handle.kubeconfig)
    try:
        _setup(api, profile)
        lat = []
        for i in range(args.rounds):
            lat.append(one_round(api, i))
            print(f"round {i}: {lat[-1]:.3f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        api.close()
        cluster.down()
    lat.sort()
    print(
        f"TAS group QuotaReserved after its Workload first seen, {len(lat)} rounds: median "
        f"{statistics.median(lat):.3f} s, max {lat[-1]:.3f} s, all {[round(x, 3) for x in lat]}"
    )


if __name__ == "__main__":
    main()
