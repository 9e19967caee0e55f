"""Measure how long the LWS controller takes to act on a change of a held rollout: from an LWS
spec write to its leader StatefulSet write (the reconcile) and to the StatefulSet controller's
deletion of the first pod that write releases (what a watched "must never happen" window sees).
`timeouts.reconcile_window_seconds` (fixtures/profiles/default.yaml; the windows of ROLL-PART-001
and ROLL-FAULT-001) is derived from these figures.

Run: .venv/bin/python benchmarks/reconcile_latency.py [--rounds 10] [--out FILE.json]

Per round, in a namespace of its own: an LWS of 2 groups of 2 (maxUnavailable 1, spec.partition 1)
is created and Available, its worker template changed; once group 1 is updated and the partition
holds (Available, updatedReplicas 1), a pod watch and a StatefulSet watch are opened from a list's
resourceVersion (no event after it is missed) and spec.partition is lowered to 0. Recorded on the
client's monotonic clock: the partition PATCH acknowledged, the leader StatefulSet's partition 0
first seen, group 0's leader pod first seen deleting (deletionTimestamp) or deleted. Uses its own
cluster name and port range (never a cluster you are using).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from lws_conformance import workloads
from lws_conformance.k8s import predicates as P
from lws_conformance.k8s.client import api_client
from lws_conformance.k8s.wait import wait_for
from lws_conformance.profile import load_profile
from lws_conformance.providers.local import LocalCluster

G, V, PLURAL, NAME = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "b"
HERE = Path(__file__).resolve().parent


def _watch(list_fn: Any, rv: str, ns: str, hit: Any, seen: dict[str, float], done: threading.Event) -> None:
    """Stream events after resourceVersion `rv`; record when `hit(type, object)` first names a key."""
    w = watch.Watch()
    try:
        for ev in w.stream(list_fn, namespace=ns, resource_version=rv, timeout_seconds=60):
            key = hit(ev["type"], ev["object"])
            if key and key not in seen:
                seen[key] = time.monotonic()
            if done.is_set() or {"sts", "pod"} <= seen.keys():
                w.stop()
    except Exception:  # noqa: BLE001  (the stream ends when the namespace goes away)
        return


def _lws_status(custom: client.CustomObjectsApi, api: client.ApiClient, ns: str, updated: int, what: str) -> None:
    def ok(objs: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        return [
            o
            for o in objs
            if (o.get("status") or {}).get("readyReplicas") == 2
            and (o.get("status") or {}).get("updatedReplicas") == updated
            and o["metadata"].get("generation") == (o.get("status") or {}).get("observedGeneration")
            and P.condition(o, "Available") == "True"
        ] or None

    wait_for(
        api,
        custom.list_namespaced_custom_object,
        ok,
        what=f"LWS {ns}/{NAME}",
        condition=what,
        timeout=120,
        group=G,
        version=V,
        namespace=ns,
        plural=PLURAL,
    )


def one_round(api: client.ApiClient, i: int) -> dict[str, float]:
    core, apps, custom = client.CoreV1Api(api), client.AppsV1Api(api), client.CustomObjectsApi(api)
    ns = f"reconcile-{i}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    obj = workloads.lws(NAME, replicas=2, size=2)
    obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"
    obj["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0, "partition": 1},
    }
    custom.create_namespaced_custom_object(G, V, ns, PLURAL, obj)
    _lws_status(custom, api, ns, 2, "Available with 2 groups")
    custom.patch_namespaced_custom_object(
        G,
        V,
        ns,
        PLURAL,
        NAME,
        {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"metadata": {"annotations": {"bench": str(i)}}}}}},
    )
    _lws_status(custom, api, ns, 1, "Available, updatedReplicas 1 (partition 1 holding)")

    seen: dict[str, float] = {}
    done = threading.Event()

    def sts_hit(_: str, s: Any) -> str | None:
        ru = s.spec.update_strategy.rolling_update
        return "sts" if s.metadata.name == NAME and ru is not None and (ru.partition or 0) == 0 else None

    def pod_hit(kind: str, p: Any) -> str | None:
        gone = kind == "DELETED" or p.metadata.deletion_timestamp is not None
        return "pod" if p.metadata.name == f"{NAME}-0" and gone else None

    threads = []
    for list_fn, hit in ((apps.list_namespaced_stateful_set, sts_hit), (core.list_namespaced_pod, pod_hit)):
        rv = str(list_fn(ns).metadata.resource_version)
        threads.append(threading.Thread(target=_watch, args=(list_fn, rv, ns, hit, seen, done), daemon=True))
    for t in threads:
        t.start()
    sent = time.monotonic()
    custom.patch_namespaced_custom_object(
        G, V, ns, PLURAL, NAME, {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": 0}}}}
    )
    acked = time.monotonic()
    for t in threads:
        t.join(30)
    done.set()
    core.delete_namespace(ns)
    if {"sts", "pod"} - seen.keys():
        raise RuntimeError(f"round {i}: seen {sorted(seen)} of the leader StatefulSet write and the pod deletion")
    return {
        "patch_round_trip": acked - sent,
        "leader_sts_write": max(0.0, seen["sts"] - acked),
        "pod_deleting": max(0.0, seen["pod"] - acked),
    }


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return {
        "median": round(statistics.median(xs), 3),
        "p95": round(p95, 3),
        "max": round(xs[-1], 3),
        "min": round(xs[0], 3),
    }


def _machine() -> dict[str, Any]:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    return {
        "hostname": platform.node(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_avg_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


def _machine_line() -> str:
    mem = next(
        (int(ln.split()[1]) for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal:")), 0
    )
    return f"{platform.system()}, {os.cpu_count()} cores, {round(mem / 2**20)} GiB RAM"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--base-port", type=int, default=18800)
    ap.add_argument("--profile", default="default", help="the profile measured (default: default)")
    ap.add_argument("--name", default="bench-reconcile")
    stamp = time.strftime("%Y-%m-%d-%H%M", time.gmtime())
    ap.add_argument("--out", default=str(HERE / "results" / f"reconcile-latency-{stamp}.json"))
    args = ap.parse_args()
    profile = load_profile(args.profile, [f"network.base_port={args.base_port}"])
    cluster = LocalCluster(profile, name=args.name)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    machine_before = _machine()
    handle = cluster.up(lambda m: print(m, flush=True))
    api = api_client(handle.kubeconfig)
    try:
        rounds = []
        for i in range(args.rounds):
            rounds.append(one_round(api, i))
            print(f"round {i}: " + ", ".join(f"{k} {v:.3f} s" for k, v in rounds[-1].items()), flush=True)
    finally:
        api.close()
        cluster.down()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE.parent, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=HERE.parent, capture_output=True, text=True).stdout
    figures = {k: _stats([r[k] for r in rounds]) for k in rounds[0]}
    load = (
        f"{machine_before['load_avg_1_5_15'][0]:.0f}-{os.getloadavg()[0]:.0f} "
        "(1-min load average before and after; other clusters running beside it)"
    )
    doc: dict[str, Any] = {
        "recorded": {
            "date": started[:10],
            "commit": commit.strip()[:7],
            "machine": _machine_line(),
            "load": load,
            "source": "written by the benchmark when it ran",
        },
        "benchmark": "benchmarks/reconcile_latency.py",
        "what": "LWS spec.partition lowered 1 -> 0 on a held rollout: seconds from the PATCH acknowledged to the "
        "leader StatefulSet's partition 0 seen (leader_sts_write) and to group 0's leader pod seen deleting "
        "(pod_deleting), client-side watches",
        "date": started,
        "commit": commit.strip(),
        "worktree_dirty": bool(dirty.strip()),
        "machine": {**machine_before, "load_avg_after": [round(x, 2) for x in os.getloadavg()]},
        "versions": profile.versions,
        "rounds": len(rounds),
        "figures": figures,
        "all": rounds,
    }
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    f = figures
    print(
        f"{len(rounds)} rounds: leader StatefulSet write median {f['leader_sts_write']['median']} s, max "
        f"{f['leader_sts_write']['max']} s; pod deleting median {f['pod_deleting']['median']} s, max "
        f"{f['pod_deleting']['max']} s -> {args.out}"
    )


if __name__ == "__main__":
    main()
