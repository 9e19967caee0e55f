"""Faults, as a chaostoolkit extension (`provider: {type: python, module: lws_conformance.chaos.actions}`).

Each fault is (target selector, quantity, duration), goes through `safety` first, returns the
targets it touched (journal-friendly dicts) and, with `dry_run=True`, only lists what it would
touch. Faults that stay in effect (a stopped controller, a failed node) register their undo in
the safety ledger; with a `duration` they undo themselves in a `finally`, so even a Ctrl-C during
the fault window restores them.

chaostoolkit passes `configuration`: `kubeconfig` (path; env `LWSC_KUBECONFIG`), `namespace`
(env `LWSC_NAMESPACE`) and optionally `lwsc_disposable_cluster` (see `safety.local_cluster`).

How kwok stands in for a kubelet (the faults table of docs/chaos.md): a container restart is a JSON
patch raising `restartCount` on the status subresource (phase stays Running); a failed pod is a
status patch to phase Failed; a node failure is the node leaving kwok's management, so its
Lease stops being renewed and KCM declares it NotReady after the node-monitor grace period
(profile key `timeouts.node_grace_seconds`, 40 s by default).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ..k8s.client import api_client, to_dict
from ..k8s.objects import RUN_LABEL
from ..k8s.wait import observe, wait_for
from ..providers import process
from ..providers.local import LocalCluster
from ..providers.nodes import KWOK_ANNOTATION
from . import capture, safety, state

Obj = dict[str, Any]
Configuration = dict[str, Any] | None
LWS_PREFIX = "leaderworkerset.sigs.k8s.io/"
JSON_PATCH = "application/json-patch+json"


# -- context ---------------------------------------------------------------------------------


def kubeconfig_of(configuration: Configuration) -> str:
    kc = safety.kubeconfig_given(configuration)
    if not kc:
        raise safety.ChaosRefused("no kubeconfig: set configuration.kubeconfig or LWSC_KUBECONFIG")
    return kc


def namespace_of(configuration: Configuration, namespace: str | None = None) -> str | None:
    return namespace or (configuration or {}).get("namespace") or os.environ.get("LWSC_NAMESPACE")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def group_selector(lws: str, group: int | str | None = None, worker: int | str | None = None) -> str:
    """Label selector for an LWS's pods, one group, or one pod of a group (worker 0 = leader)."""
    parts = [f"{LWS_PREFIX}name={lws}"]
    if group is not None:
        parts.append(f"{LWS_PREFIX}group-index={group}")
    if worker is not None:
        parts.append(f"{LWS_PREFIX}worker-index={worker}")
    return ",".join(parts)


@contextmanager
def _target_pods(
    configuration: Configuration, namespace: str | None, label_selector: str | None, quantity: int | str | None
) -> Iterator[tuple[client.CoreV1Api, str, list[Obj]]]:
    """(core API, namespace, the `quantity` live pods matching `label_selector`) in a harness
    namespace; refuses selector-less, foreign-namespace and empty targets."""
    api = api_client(kubeconfig_of(configuration))
    try:
        core = client.CoreV1Api(api)
        selector = safety.require_selector(label_selector, "pod")
        ns = safety.check_namespace(core, namespace_of(configuration, namespace))
        pods = [to_dict(api, p) for p in core.list_namespaced_pod(ns, label_selector=selector).items]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        picked = safety.pick(live, safety.parse_quantity(quantity))
        if not picked:
            raise safety.ChaosRefused(f"no live pod in {ns} matches {label_selector!r}")
        yield core, ns, picked
    finally:
        api.close()


_LAST_FAULT: dict[str, Any] = {}


def _record(pods: list[Obj]) -> None:
    """Remember the pods the latest pod fault touched and when, for `probes.seconds_to_recover`."""
    _LAST_FAULT.clear()
    _LAST_FAULT.update(at=time.monotonic(), uids={p["metadata"]["name"]: p["metadata"]["uid"] for p in pods})


def last_fault() -> dict[str, Any]:
    """{"at": monotonic time, "uids": {pod: uid}} of the latest pod fault in this process, or {}."""
    return dict(_LAST_FAULT)


def _target(pod: Obj, **extra: Any) -> Obj:
    meta = pod["metadata"]
    return {"name": meta["name"], "uid": meta["uid"], "node": (pod.get("spec") or {}).get("nodeName"), **extra}


# -- pod faults (safe on a shared cluster: they stay inside the test's own namespace) ----------


def kill_pods(
    label_selector: str,
    quantity: int | str = 1,
    namespace: str | None = None,
    grace_period: int | None = None,
    dry_run: bool = False,
    configuration: Configuration = None,
) -> list[Obj]:
    """Delete `quantity` pods matching `label_selector` in a harness namespace."""
    with _target_pods(configuration, namespace, label_selector, quantity) as (core, ns, pods):
        if not dry_run:
            _record(pods)
            for p in pods:
                core.delete_namespaced_pod(p["metadata"]["name"], ns, grace_period_seconds=grace_period)
        return [_target(p) for p in pods]


def kill_leader_pod(
    lws: str, group: int = 0, namespace: str | None = None, dry_run: bool = False, configuration: Configuration = None
) -> list[Obj]:
    return kill_pods(group_selector(lws, group, 0), 1, namespace, None, dry_run, configuration)


def kill_worker_pod(
    lws: str,
    group: int = 0,
    worker: int = 1,
    namespace: str | None = None,
    dry_run: bool = False,
    configuration: Configuration = None,
) -> list[Obj]:
    if int(worker) < 1:
        raise safety.ChaosRefused("worker index must be >= 1 (0 is the leader: use kill_leader_pod)")
    return kill_pods(group_selector(lws, group, worker), 1, namespace, None, dry_run, configuration)


def restart_patch(pod: Obj, idx: int, now: str) -> list[Obj]:
    """JSON patch reporting a restart of container `idx`: restartCount + 1, a terminated
    lastState; `test` ops make it fail on a concurrent change instead of clobbering it."""
    st = pod["status"]["containerStatuses"][idx]
    count = int(st.get("restartCount") or 0)
    started = ((st.get("state") or {}).get("running") or {}).get("startedAt") or now
    return [
        {"op": "test", "path": "/metadata/uid", "value": pod["metadata"]["uid"]},
        {"op": "test", "path": "/status/phase", "value": "Running"},
        {"op": "test", "path": f"/status/containerStatuses/{idx}/restartCount", "value": count},
        {"op": "replace", "path": f"/status/containerStatuses/{idx}/restartCount", "value": count + 1},
        {
            "op": "add",
            "path": f"/status/containerStatuses/{idx}/lastState",
            "value": {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": started, "finishedAt": now}},
        },
    ]


def failed_status(pod: Obj, now: str) -> Obj:
    """The pods/status merge patch turning `pod` Failed: every container terminated (exit 1),
    Ready and ContainersReady False; other conditions and fields untouched."""
    statuses = [
        {
            **c,
            "ready": False,
            "started": False,
            "state": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": now}},
        }
        for c in (pod.get("status") or {}).get("containerStatuses") or []
    ]
    conds = [
        {**c, "status": "False", "lastTransitionTime": now} if c["type"] in ("Ready", "ContainersReady") else c
        for c in (pod.get("status") or {}).get("conditions") or []
    ]
    return {"status": {"phase": "Failed", "containerStatuses": statuses, "conditions": conds}}


def restart_containers(
    label_selector: str,
    quantity: int | str = 1,
    container: str | None = None,
    namespace: str | None = None,
    dry_run: bool = False,
    configuration: Configuration = None,
) -> list[Obj]:
    """Report a container restart the way a kubelet would: `restartCount` + 1 and a terminated
    `lastState`, by JSON patch on the status subresource. The phase stays Running; `test` ops make
    the patch fail instead of clobbering a concurrent change."""
    with _target_pods(configuration, namespace, label_selector, quantity) as (core, ns, pods):
        out = []
        for p in pods:
            statuses = (p.get("status") or {}).get("containerStatuses") or []
            idx = next((i for i, c in enumerate(statuses) if container in (None, c["name"])), None)
            if idx is None or p["status"].get("phase") != "Running":
                raise safety.ChaosRefused(f"pod {p['metadata']['name']} has no running container {container or ''}")
            count = int(statuses[idx].get("restartCount") or 0)
            patch = restart_patch(p, idx, _now())
            if not dry_run:
                _record([p])
                core.patch_namespaced_pod_status(p["metadata"]["name"], ns, patch, _content_type=JSON_PATCH)
            out.append(_target(p, container=statuses[idx]["name"], restart_count=count + (0 if dry_run else 1)))
        return out


def fail_pods(
    label_selector: str,
    quantity: int | str = 1,
    namespace: str | None = None,
    dry_run: bool = False,
    configuration: Configuration = None,
) -> list[Obj]:
    """Turn pods Failed (status subresource): every container terminated with exit code 1."""
    with _target_pods(configuration, namespace, label_selector, quantity) as (core, ns, pods):
        now = _now()
        if not dry_run:
            _record(pods)
        for p in pods if not dry_run else []:
            core.patch_namespaced_pod_status(p["metadata"]["name"], ns, failed_status(p, now))
        return [_target(p) for p in pods]


# -- node failure (private cluster: the node leaves kwok, so its heartbeat stops) -------------


def _node_ready(node: Obj) -> str | None:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            status: str = c.get("status")
            return status
    return None


def fail_nodes(
    node_selector: str,
    quantity: int | str = 1,
    duration: float | None = None,
    not_ready_within: float = 90,
    dry_run: bool = False,
    configuration: Configuration = None,
) -> list[Obj]:
    """Stop heartbeating for harness fake nodes and wait until KCM marks them NotReady.

    The node leaves kwok (see `_unmanage`), so nobody renews its Lease (the heartbeat) any more;
    KCM's node-lifecycle controller declares Ready=Unknown after its grace period, taints the
    node and marks its pods not Ready. With `duration`, the nodes are restored afterwards."""
    selector = safety.require_selector(node_selector, "node")
    api = api_client(kubeconfig_of(configuration))
    core = client.CoreV1Api(api)
    try:
        nodes = [to_dict(api, n) for n in core.list_node(label_selector=selector).items]
        safety.check_nodes(nodes)
        chosen = safety.pick(nodes, safety.parse_quantity(quantity))
        if not chosen:
            raise safety.ChaosRefused(f"no node matches {selector!r}")
        if dry_run:
            return [{"name": n["metadata"]["name"]} for n in chosen]
        _disposable(configuration)  # a node fault disturbs every test on the cluster
        out: list[Obj] = []
        try:
            for n in chosen:
                name = n["metadata"]["name"]
                _remember_node(n, configuration)
                safety.applied(f"node/{name}", f"node {name} not heartbeating", _node_undo(name, configuration))
                _reregister(api, core, n, kwok=False)
                out.append({"name": name, "stopped_at": time.monotonic()})
            for t in out:
                wait_for(
                    api,
                    core.list_node,
                    lambda objs: bool(objs) and _node_ready(objs[0]) != "True",
                    what=f"node {t['name']}",
                    condition="Ready != True after its heartbeat stopped (KCM node-monitor grace period)",
                    timeout=not_ready_within,
                    field_selector=f"metadata.name={t['name']}",
                )
                t["not_ready_after_s"] = round(time.monotonic() - t.pop("stopped_at"), 1)
            if duration:
                threading.Event().wait(float(duration))
        finally:
            if duration:
                for t in out:
                    restore_node(t["name"], configuration=configuration)
        return out
    finally:
        api.close()


def _disposable(configuration: Configuration) -> None:
    """Node faults, like process faults, only on a private-* or explicitly disposable local cluster."""
    safety.local_cluster(kubeconfig_of(configuration), (configuration or {}).get("lwsc_disposable_cluster"))


def node_body(node: Obj, kwok: bool) -> Obj:
    """The Node to create for `node` (its labels, annotations and whole spec), managed by kwok or
    not (the kwok annotation added or removed)."""
    meta = node["metadata"]
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != KWOK_ANNOTATION[0]}
    if kwok:
        annotations[KWOK_ANNOTATION[0]] = KWOK_ANNOTATION[1]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": meta["name"], "labels": dict(meta.get("labels") or {}), "annotations": annotations},
        "spec": dict(node.get("spec") or {}),
    }


STATUS_RESTORED = ("capacity", "allocatable", "nodeInfo", "addresses")


def status_restore_patch(before: Obj) -> list[Obj]:
    """JSON patch replacing the status fields a returning node must have exactly as before (kwok's
    node-initialize stage fills missing ones with its defaults: cpu 1k, memory 1Ti, pods 1M,
    kubelet kwok-<version>); `replace` drops keys kwok added, a merge patch would keep them."""
    st = before.get("status") or {}
    return [{"op": "add", "path": f"/status/{k}", "value": st[k]} for k in STATUS_RESTORED if k in st]


def _reregister(api: client.ApiClient, core: client.CoreV1Api, node: Obj, kwok: bool) -> None:
    """Hand a node to kwok (`kwok=True`) or take it away, so nobody renews its Lease any more.

    kwok v0.8.0 drops watch events that no longer (or newly) match its annotation selector
    without releasing or taking the node's lease hold (pkg/utils/informer skips filtered
    Modified events), so toggling the annotation alone changes nothing. Only Deleted / Added
    events do: the Node object is deleted and re-created at once, with or without the
    annotation, with the same labels, annotations, spec and status (`node_body`). Its pods stay
    bound (pod GC quarantines pods of a missing node for 40 s, and the node is back within a second)."""
    name = node["metadata"]["name"]
    core.delete_node(name)
    wait_for(
        api,
        core.list_node,
        lambda objs: not objs,
        what=f"node {name}",
        condition="deleted (to release kwok's lease hold)",
        timeout=30,
        field_selector=f"metadata.name={name}",
    )
    _delete_lease(api, name)
    core.create_node(node_body(node, kwok))  # type: ignore[arg-type]  # the client accepts dicts
    core.patch_node_status(name, {"status": reregistered_status(node, returning=kwok, now=_now())})


REREGISTERED_STATUS = ("capacity", "allocatable", "conditions", "addresses", "nodeInfo", "daemonEndpoints", "phase")


def reregistered_status(node: Obj, returning: bool, now: str) -> Obj:
    """The status a re-created Node is given: the recorded one; for a node `returning` to kwok,
    with every condition's lastHeartbeatTime set to `now`, as a returning kubelet posts.

    Without the fresh heartbeat the returning node would carry the very lastHeartbeatTime KCM
    kept when it declared it Unknown, and KCM's node-lifecycle controller refreshes its cached
    node status only when that time changes (tryUpdateNodeHealth, kubernetes v1.36.3
    pkg/controller/nodelifecycle/node_lifecycle_controller.go): it would keep judging every pod
    added to the node by the cached Ready=Unknown and mark it not Ready (processPod →
    MarkPodsNotReady) until kwok's next status heartbeat, minutes later — a false red for any
    test that lands a pod there (seen on reused clusters after `chaos/node-failure.yaml`)."""
    st = node.get("status") or {}
    out = {k: st[k] for k in REREGISTERED_STATUS if k in st}
    if returning and "conditions" in out:
        out["conditions"] = [{**c, "lastHeartbeatTime": now} for c in out["conditions"]]
    return out


def _delete_lease(api: client.ApiClient, name: str) -> None:
    """Delete the node's heartbeat Lease with the node: kwok v0.8.0 renews an existing Lease
    without updating its ownerReference (node_lease_controller.go sets it only when empty), so
    the old one keeps pointing at the deleted Node's uid and the garbage collector removes it
    under kwok's feet some time later. A fresh Lease gets the new Node as its owner."""
    try:
        client.CoordinationV1Api(api).delete_namespaced_lease(name, "kube-node-lease")
    except ApiException as exc:
        if exc.status != 404:
            raise


def _wait_lease_owned(api: client.ApiClient, name: str, timeout: float) -> None:
    """Until kwok holds the node's Lease, owned by the Node as it is now (its current uid)."""
    uid = client.CoreV1Api(api).read_node(name).metadata.uid  # type: ignore[union-attr]
    wait_for(
        api,
        client.CoordinationV1Api(api).list_namespaced_lease,
        lambda objs: bool(objs) and [o.get("uid") for o in objs[0]["metadata"].get("ownerReferences") or []] == [uid],
        what=f"Lease kube-node-lease/{name}",
        condition=f"owned by node {name} uid {uid} (kwok renewing it)",
        timeout=timeout,
        namespace="kube-node-lease",
        field_selector=f"metadata.name={name}",
    )


# The complete Node each failed node had before its fault, in this process and on disk (the local
# cluster's state directory), so `restore_node` restores it exactly even from another process.
_NODE_BEFORE: dict[str, Obj] = {}


def _prior_file(name: str, configuration: Configuration) -> Any:
    cluster = safety.local_cluster_of(kubeconfig_of(configuration))
    return cluster.dir / "chaos" / f"node-{name}.json" if cluster else None


def _remember_node(node: Obj, configuration: Configuration) -> None:
    name = node["metadata"]["name"]
    if name in _NODE_BEFORE:
        return  # already failed: keep the state from before the first fault
    _NODE_BEFORE[name] = node
    path = _prior_file(name, configuration)
    if path and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(node))


def _prior_node(name: str, configuration: Configuration) -> Obj | None:
    if name in _NODE_BEFORE:
        return _NODE_BEFORE[name]
    path = _prior_file(name, configuration)
    return json.loads(path.read_text()) if path and path.is_file() else None


def _forget_node(name: str, configuration: Configuration) -> None:
    _NODE_BEFORE.pop(name, None)
    path = _prior_file(name, configuration)
    if path:
        path.unlink(missing_ok=True)


def _node_undo(name: str, configuration: Configuration) -> Any:
    return lambda: restore_node(name, configuration=configuration)


def restore_node(
    name: str,
    capacity: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
    ready_within: float = 60,
    configuration: Configuration = None,
) -> Obj:
    """Bring a failed node back exactly as it was before `fail_nodes` (its recorded Node: labels,
    annotations, spec, capacity, allocatable, node info, addresses, conditions), managed by kwok
    again (heartbeat, Ready); then its pods are reported Ready again, as a returning kubelet would
    (kwok's stages only ready Pending pods). Fails if the node then differs from before in
    anything `state.node_state` compares. `capacity`/`allocatable` only matter for a node failed
    by another process whose record is gone (they override what the node shows now)."""
    _disposable(configuration)
    api = api_client(kubeconfig_of(configuration))
    core = client.CoreV1Api(api)
    try:
        node = to_dict(api, core.read_node(name))
        safety.check_nodes([node])
        before = _prior_node(name, configuration)
        if before is None:
            before = node
            for key, value in (("capacity", capacity), ("allocatable", allocatable)):
                if value:
                    before.setdefault("status", {})[key] = value
        if not (node["metadata"].get("annotations") or {}).get(KWOK_ANNOTATION[0]):
            _reregister(api, core, before, kwok=True)
        started = time.monotonic()
        _wait_lease_owned(api, name, ready_within)
        _wait_steadily_ready(api, name, started + ready_within)
        core.patch_node_status(name, status_restore_patch(before), _content_type=JSON_PATCH)
        differs = state.diff(state.node_state(before), state.node_state(to_dict(api, core.read_node(name))))
        if differs:
            raise RuntimeError(f"node {name} restored but differs from before its fault: {'; '.join(differs)}")
        revived = _revive_pods(api, core, name)
        _forget_node(name, configuration)
        safety.restored(f"node/{name}")
        return {"name": name, "ready_after_s": round(time.monotonic() - started, 1), "pods_reported_ready": revived}
    finally:
        api.close()


OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}


def give_up_node(name: str, how: str = "delete", configuration: Configuration = None) -> Obj:
    """What an operator does about a node failed by `fail_nodes` that will not come back, so its
    pods can be replaced (StatefulSet pods of an unreachable node otherwise stay bound for good):
    `delete` its Node (pod GC then deletes its pods after its 40 s quarantine; the fault is over,
    nothing is left to restore) or taint it `out-of-service` (non-graceful node shutdown: its pods
    are evicted and, the node being NotReady, force-deleted by pod GC; the rollback still brings
    the recorded node back, without the taint)."""
    _disposable(configuration)
    api = api_client(kubeconfig_of(configuration))
    core = client.CoreV1Api(api)
    try:
        node = to_dict(api, core.read_node(name))
        safety.check_nodes([node])
        if how == "delete":
            core.delete_node(name)
            _forget_node(name, configuration)
            safety.restored(f"node/{name}")
        elif how == "out-of-service":
            taints = [t for t in node["spec"].get("taints") or [] if t["key"] != OUT_OF_SERVICE["key"]]
            core.patch_node(name, {"spec": {"taints": [*taints, OUT_OF_SERVICE]}})
        else:
            raise safety.ChaosRefused(f"how must be 'delete' or 'out-of-service', got {how!r}")
        return {"name": name, "how": how, "at": time.monotonic()}
    finally:
        api.close()


# KCM's node-monitor-period is 5 s: twice that without a taint or NotReady means KCM has looked at
# the re-created node with its new Lease (when KCM missed the delete, it first judges the new
# node by the old one's stale heartbeat and taints it unreachable for a moment).
STEADY_SECONDS = 10.0


def _wait_steadily_ready(api: client.ApiClient, name: str, deadline: float) -> None:
    """Until node `name` is Ready=True without node.kubernetes.io taints for STEADY_SECONDS on end."""
    core = client.CoreV1Api(api)

    def bad(objs: list[Obj]) -> str | None:
        if not objs or _node_ready(objs[0]) != "True":
            return f"Ready={_node_ready(objs[0]) if objs else 'missing'}"
        taints = [t["key"] for t in objs[0]["spec"].get("taints") or [] if t["key"].startswith("node.kubernetes.io/")]
        return f"tainted {taints}" if taints else None

    while True:
        wait_for(
            api,
            core.list_node,
            lambda objs: not bad(objs),
            what=f"node {name}",
            condition="Ready=True and untainted after kwok resumed its heartbeat",
            timeout=max(1.0, deadline - time.monotonic()),
            field_selector=f"metadata.name={name}",
        )
        seen = observe(api, core.list_node, bad, duration=STEADY_SECONDS, field_selector=f"metadata.name={name}")
        if not seen:
            return
        if time.monotonic() >= deadline:
            raise RuntimeError(f"node {name} did not stay Ready and untainted: {seen}")


def _revive_pods(api: client.ApiClient, core: client.CoreV1Api, name: str) -> list[str]:
    """Report the Running pods of harness namespaces on node `name` Ready again (never another
    user's pods); returns their names."""
    ours = {n.metadata.name for n in core.list_namespace(label_selector=RUN_LABEL).items if n.metadata}
    now = _now()
    revived = []
    for p in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}").items:
        pod = to_dict(api, p)
        st = pod.get("status") or {}
        if pod["metadata"]["namespace"] not in ours:
            continue
        if pod["metadata"].get("deletionTimestamp") or st.get("phase") != "Running":
            continue
        conds = st.get("conditions") or []
        if all(c.get("status") == "True" for c in conds if c["type"] in ("Ready", "ContainersReady")):
            continue
        conds = [
            {**c, "status": "True", "lastTransitionTime": now} if c["type"] in ("Ready", "ContainersReady") else c
            for c in conds
        ]
        statuses = [{**c, "ready": True} for c in st.get("containerStatuses") or []]
        core.patch_namespaced_pod_status(
            pod["metadata"]["name"],
            pod["metadata"]["namespace"],
            {"status": {"conditions": conds, "containerStatuses": statuses}},
        )
        revived.append(pod["metadata"]["name"])
    return revived


# -- process faults (local provider, private or explicitly disposable cluster only) ----------


def _cluster(configuration: Configuration, component: str) -> LocalCluster:
    cluster = safety.local_cluster(kubeconfig_of(configuration), (configuration or {}).get("lwsc_disposable_cluster"))
    safety.check_component(cluster, component)
    return cluster


def stop_component(
    component: str, duration: float | None = None, dry_run: bool = False, configuration: Configuration = None
) -> Obj:
    """Kill a control-plane or controller process (e.g. `lws`, `kueue`); with `duration`, start it
    again afterwards (also on Ctrl-C). Without, it stays down until `start_component` or the
    ledger's `restore_all`."""
    cluster = _cluster(configuration, component)
    if dry_run:
        return {"component": component, "cluster": cluster.name, "dry_run": True}
    _PROCESS_BEFORE.setdefault((cluster.name, component), capture.processes(cluster.kubeconfig).get(component) or {})
    safety.applied(
        f"process/{cluster.name}/{component}",
        f"{component} stopped on {cluster.name}",
        lambda: _start(cluster, component),
    )
    started = time.monotonic()
    cluster.stop_component(component)
    try:
        if duration:
            threading.Event().wait(float(duration))
    finally:
        if duration:
            _start(cluster, component)
    return {"component": component, "cluster": cluster.name, "down_s": round(time.monotonic() - started, 1)}


# Each stopped process's state before its fault (command line, running, healthy), to verify the
# restart: `LocalCluster.start_component` reuses the saved argv, this proves it is the same one.
_PROCESS_BEFORE: dict[tuple[str, str], Obj] = {}


def _start(cluster: LocalCluster, component: str) -> None:
    if not any(r.name == component and _alive(r) for r in cluster.records()):
        cluster.start_component(component)
    safety.restored(f"process/{cluster.name}/{component}")
    before = _PROCESS_BEFORE.pop((cluster.name, component), None)
    if before:
        differs = state.diff(before, capture.processes(cluster.kubeconfig).get(component) or {})
        if differs:
            raise RuntimeError(f"{component} restarted but differs from before its fault: {'; '.join(differs)}")


def _alive(rec: process.ProcRecord) -> bool:
    return process.alive(rec)


def start_component(component: str, configuration: Configuration = None) -> Obj:
    """Start a component stopped by `stop_component` (idempotent: a running one is left alone)."""
    cluster = _cluster(configuration, component)
    started = time.monotonic()
    _start(cluster, component)
    return {"component": component, "cluster": cluster.name, "ready_after_s": round(time.monotonic() - started, 1)}


def kill_lws_controller(
    duration: float | None = None, dry_run: bool = False, configuration: Configuration = None
) -> Obj:
    return stop_component("lws", duration, dry_run, configuration)


def kill_kueue_controller(
    duration: float | None = None, dry_run: bool = False, configuration: Configuration = None
) -> Obj:
    return stop_component("kueue", duration, dry_run, configuration)


def restart_apiserver(downtime: float = 0, dry_run: bool = False, configuration: Configuration = None) -> Obj:
    """Stop kube-apiserver, keep it down `downtime` seconds, start it again (always)."""
    out = stop_component("kube-apiserver", downtime or 0.001, dry_run, configuration)
    if not dry_run:
        cluster = _cluster(configuration, "kube-apiserver")
        dead = [r.name for r in cluster.records() if not _alive(r)]
        out["components_down_after_restart"] = dead
    return out


def pending_faults() -> list[str]:
    """Faults still in effect in this process (for a rollback's journal entry)."""
    return safety.pending()


def restore_all_faults(configuration: Configuration = None) -> Obj:
    """Rollback: undo every fault this process still has in effect."""
    before = safety.pending()
    errors = safety.restore_all()
    if errors:
        raise RuntimeError("could not undo: " + "; ".join(errors))
    return {"restored": before}
