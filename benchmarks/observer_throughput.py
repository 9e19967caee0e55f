"""Measure how fast the timeline recorder handles watch events, and prove it drops none.

A synthetic rollout of G groups x S pods (default 100 x 8: 800 pods, each created, scheduled,
made Ready, deleted and recreated at a new revision) is served by `ScriptedApi` sources, one per
kind, so events go through the recorder's real code path: the Python client's `Watch.stream`
splitting and parsing JSON lines, `Recorder.handle` (snapshot + append), and the final sync that
compares the recorder's state with a fresh list. Pods are full-size (managedFields, env, status)
like the API server sends them. It also times the invariant checks over the recorded stream.

Run: .venv/bin/python benchmarks/observer_throughput.py [--groups 100] [--size 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from typing import Any

from lws_conformance.observe import Recorder, Source, Timeline, check_all
from lws_conformance.observe.recorder import ScriptedApi

Obj = dict[str, Any]
P = "leaderworkerset.sigs.k8s.io/"
NS = "bench"
L = "bench"


class Clock:
    """resourceVersions: one global counter, like etcd revisions."""

    def __init__(self) -> None:
        self.rv = 1000

    def next(self) -> str:
        self.rv += 1
        return str(self.rv)


def pod(
    name: str,
    g: int,
    w: int,
    rev: str,
    uid: str,
    size: int,
    rv: str,
    phase: str = "Pending",
    ready: bool = False,
    node: str | None = None,
    deleting: bool = False,
) -> Obj:
    labels = {
        P + "name": L,
        P + "group-index": str(g),
        P + "worker-index": str(w),
        P + "template-revision-hash": rev,
        P + "group-key": uuid.uuid5(uuid.NAMESPACE_DNS, f"{g}").hex + "abcdefgh",
        "apps.kubernetes.io/pod-index": str(w if w else g),
        "controller-revision-hash": f"{name}-{rev}",
        "statefulset.kubernetes.io/pod-name": name,
        "lwsc.x-k8s.io/run": "bench",
    }
    env = [
        {"name": k, "value": v}
        for k, v in (
            ("LWS_LEADER_ADDRESS", f"{L}-{g}.{L}.{NS}"),
            ("LWS_GROUP_SIZE", str(size)),
            ("LWS_WORKER_INDEX", str(w)),
        )
    ]
    managed = [
        {
            "manager": m,
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {f"f:{k}": {} for k in labels}},
                "f:status": {"f:conditions": {}, "f:phase": {}},
            },
        }
        for m in ("kube-controller-manager", "kube-scheduler", "kwok")
    ]
    conds = [
        {"type": t, "status": "True" if ready else "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    meta: Obj = {
        "name": name,
        "namespace": NS,
        "uid": uid,
        "resourceVersion": rv,
        "generateName": f"{L}-{g}-",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": labels,
        "annotations": {P + "size": str(size), **({P + "leader-name": f"{L}-{g}"} if w else {})},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": f"{L}-{g}" if w else L,
                "uid": str(uuid.uuid4()),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "managedFields": managed,
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:01Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.k8s.io/nginx-slim:0.27",
                    "env": env,
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
            "nodeName": node,
            "hostname": name,
            "subdomain": L,
            "restartPolicy": "Always",
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
        },
        "status": {
            "phase": phase,
            "conditions": conds,
            "hostIP": "10.0.0.1",
            "podIP": "10.1.0.1",
            "qosClass": "Burstable",
        },
    }


def sts(name: str, g: int | None, rev: str, clock: Clock, replicas: int, ready: int, partition: int = 0) -> Obj:
    labels = {P + "name": L, P + "template-revision-hash": rev}
    if g is not None:
        labels[P + "group-index"] = str(g)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"sts-{name}-{rev}",
            "resourceVersion": clock.next(),
            "labels": labels,
            "annotations": {P + "replicas": str(replicas)},
            "generation": 1,
        },
        "spec": {"replicas": replicas, "updateStrategy": {"rollingUpdate": {"partition": partition}}},
        "status": {"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready},
    }


def lws_obj(clock: Clock, groups: int, size: int, ready: int, updated: int, conds: dict[str, str]) -> Obj:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": L, "namespace": NS, "uid": "lws-uid", "resourceVersion": clock.next(), "generation": 1},
        "spec": {"replicas": groups, "leaderWorkerTemplate": {"size": size}},
        "status": {
            "replicas": groups,
            "readyReplicas": ready,
            "updatedReplicas": updated,
            "observedGeneration": 1,
            "conditions": [{"type": k, "status": v} for k, v in conds.items()],
        },
    }


def rollout(groups: int, size: int) -> dict[str, list[Obj]]:
    """Watch events per kind for: create G groups, then update them one at a time from the top."""
    clock = Clock()
    ev: dict[str, list[Obj]] = {
        k: [] for k in ("Pod", "StatefulSet", "LeaderWorkerSet", "ControllerRevision", "Workload")
    }

    def emit(kind: str, etype: str, obj: Obj) -> None:
        ev[kind].append({"type": etype, "object": obj})

    def group(g: int, rev: str, ready_groups: int) -> None:
        emit("StatefulSet", "ADDED", sts(f"{L}-{g}", g, rev, clock, size - 1, 0)) if size > 1 else None
        for w in range(size):
            name = f"{L}-{g}" if w == 0 else f"{L}-{g}-{w}"
            uid = str(uuid.uuid4())
            emit("Pod", "ADDED", pod(name, g, w, rev, uid, size, clock.next()))
            emit("Pod", "MODIFIED", pod(name, g, w, rev, uid, size, clock.next(), node=f"n{w % 8}"))
            emit("Pod", "MODIFIED", pod(name, g, w, rev, uid, size, clock.next(), "Running", True, f"n{w % 8}"))
            uids[name] = uid
        if size > 1:
            emit("StatefulSet", "MODIFIED", sts(f"{L}-{g}", g, rev, clock, size - 1, size - 1))
        emit(
            "Workload",
            "ADDED",
            {
                "metadata": {"name": f"wl-{g}-{rev}", "uid": str(uuid.uuid4()), "resourceVersion": clock.next()},
                "status": {"conditions": [{"type": "Admitted", "status": "True"}]},
            },
        )
        emit("LeaderWorkerSet", "MODIFIED", lws_obj(clock, groups, size, ready_groups, groups, {"Progressing": "True"}))

    uids: dict[str, str] = {}
    emit(
        "ControllerRevision",
        "ADDED",
        {"metadata": {"name": f"{L}-old", "uid": "cr1", "resourceVersion": clock.next()}, "revision": 1},
    )
    emit("StatefulSet", "ADDED", sts(L, None, "old", clock, groups, 0))
    for g in range(groups):
        group(g, "old", g + 1)
    emit(
        "ControllerRevision",
        "ADDED",
        {"metadata": {"name": f"{L}-new", "uid": "cr2", "resourceVersion": clock.next()}, "revision": 2},
    )
    for g in reversed(range(groups)):
        emit("StatefulSet", "MODIFIED", sts(L, None, "new", clock, groups, groups, partition=g))
        for w in range(size):
            name = f"{L}-{g}" if w == 0 else f"{L}-{g}-{w}"
            emit(
                "Pod",
                "MODIFIED",
                pod(name, g, w, "old", uids[name], size, clock.next(), "Running", True, "n0", deleting=True),
            )
            emit(
                "Pod",
                "DELETED",
                pod(name, g, w, "old", uids[name], size, clock.next(), "Running", True, "n0", deleting=True),
            )
        if size > 1:
            emit("StatefulSet", "DELETED", sts(f"{L}-{g}", g, "old", clock, size - 1, size - 1))
        group(g, "new", groups)
    emit(
        "ControllerRevision",
        "DELETED",
        {"metadata": {"name": f"{L}-old", "uid": "cr1", "resourceVersion": clock.next()}, "revision": 1},
    )
    return ev


def run_once(events: dict[str, list[Obj]]) -> dict[str, Any]:
    total = sum(len(v) for v in events.values())
    apis = {kind: ScriptedApi([], evs) for kind, evs in events.items()}
    tl = Timeline(NS)
    rec = Recorder(tl, [Source(kind, api) for kind, api in apis.items()])
    t0 = time.perf_counter()
    rec.start()
    ok = rec.wait_events(total, timeout=300)
    elapsed = time.perf_counter() - t0
    rec.stop(sync=True)
    t1 = time.perf_counter()
    violations = check_all(tl.ordered(), L, final=False)
    check_s = time.perf_counter() - t1
    handled = len(tl.events)
    return {
        "events": total,
        "handled": handled,
        "dropped": total - handled,
        "all_in_time": ok,
        "complete": tl.complete,
        "sync_error": tl.sync_error,
        "seconds": round(elapsed, 3),
        "events_per_s": round(handled / elapsed),
        "check_all_s": round(check_s, 3),
        "violations": [v.invariant for v in violations],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    events = rollout(args.groups, args.size)
    raw = sum(len(json.dumps(e)) for v in events.values() for e in v)
    runs = [run_once(events) for _ in range(args.rounds)]
    rates = [r["events_per_s"] for r in runs]
    print(
        json.dumps(
            {
                "groups": args.groups,
                "size": args.size,
                "pods": args.groups * args.size,
                "events": runs[0]["events"],
                "per_kind": {k: len(v) for k, v in events.items()},
                "stream_mb": round(raw / 1e6, 1),
                "events_per_s_median": statistics.median(rates),
                "events_per_s_min": min(rates),
                "runs": runs,
            },
            indent=1,
        )
    )
    if any(r["dropped"] or not r["complete"] for r in runs):
        raise SystemExit("recorder dropped events or did not sync")


if __name__ == "__main__":
    main()
