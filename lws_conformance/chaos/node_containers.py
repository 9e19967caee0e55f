"""Faults on a kind cluster's nodes and controllers, as a chaostoolkit extension (`provider: {type:
python, module: lws_conformance.chaos.node_containers}`): what a real kubelet does with them.

- `pause_node` / `resume_node`: `docker pause` freezes the chaos node's kubelet and containers
  (cgroup freezer); nobody renews the node's Lease, so KCM's node lifecycle controller declares it
  NotReady after its node-monitor grace period and marks its pods not Ready; `docker unpause` lets
  the very same processes go on.
- `kill_containers`: a container killed through the node's runtime (`crictl stop --timeout 0`
  inside the node container: SIGKILL, no API write); the kubelet sees it exit and restarts it.
- `delete_controller_pod` / `wait_new_leader`: the controller pod holding the leader-election
  Lease deleted, as `kubectl delete pod` does; its Deployment's other replica takes over the
  Lease once it expires.

Every fault goes through `safety` first: a kind cluster `lwsc --profile kind up` made, its own
node containers, only the chaos node paused, pods only in harness namespaces, the controllers only
in their release namespaces. A paused node is in the fault ledger until it is resumed.
"""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from ..k8s.client import api_client, to_dict
from ..k8s.wait import wait_for
from ..providers import kind
from ..providers.base import ClusterHandle
from . import safety
from .actions import Configuration, _node_ready, _record, _target, _target_pods, kubeconfig_of

Obj = dict[str, Any]
# Each controller's leader-election Lease (cmd/main.go --leader-elect-resource-name default,
# LWS v0.9.0; Kueue's config leaderElection.resourceName, v0.17.0).
LEASES = {"lws": "b8b2488c.x-k8s.io", "kueue": "c1f6bfd2.kueue.x-k8s.io"}


def _docker(handle: ClusterHandle, *args: str) -> str:
    out = kind.node_docker(handle, *args)
    if out.returncode != 0:
        said = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise safety.ChaosRefused(f"docker {' '.join(args)} failed on {handle.endpoints['kind-cluster']}: {said}")
    return out.stdout


def _wait_ready(api: client.ApiClient, name: str, ready: bool, timeout: float, why: str) -> None:
    wait_for(
        api,
        client.CoreV1Api(api).list_node,
        lambda objs: bool(objs) and (_node_ready(objs[0]) == "True") == ready,
        what=f"node {name}",
        condition=why,
        timeout=timeout,
        field_selector=f"metadata.name={name}",
    )


def pause_node(
    node: str, not_ready_within: float = 120, dry_run: bool = False, configuration: Configuration = None
) -> Obj:
    """Freeze the chaos node's container and wait until KCM marks the node NotReady."""
    handle = safety.kind_cluster(kubeconfig_of(configuration))
    api = api_client(kubeconfig_of(configuration))
    try:
        safety.check_chaos_node(to_dict(api, client.CoreV1Api(api).read_node(node)))
        safety.check_kind_container(handle, node)
        if dry_run:
            return {"name": node}
        _docker(handle, "pause", node)
        safety.applied(f"kind-node/{node}", f"kind node {node} paused", lambda: _docker(handle, "unpause", node))
        paused = time.monotonic()
        why = "Ready != True after its container was paused (node-monitor grace period)"
        _wait_ready(api, node, False, not_ready_within, why)
        return {"name": node, "not_ready_after_s": round(time.monotonic() - paused, 1)}
    finally:
        api.close()


def resume_node(node: str, ready_within: float = 120, configuration: Configuration = None) -> Obj:
    """Unpause the chaos node's container and wait until the node is Ready again."""
    handle = safety.kind_cluster(kubeconfig_of(configuration))
    safety.check_kind_container(handle, node)
    _docker(handle, "unpause", node)
    safety.restored(f"kind-node/{node}")
    api = api_client(kubeconfig_of(configuration))
    try:
        resumed = time.monotonic()
        _wait_ready(api, node, True, ready_within, "Ready after its container was unpaused")
        return {"name": node, "ready_after_s": round(time.monotonic() - resumed, 1)}
    finally:
        api.close()


def kill_containers(
    label_selector: str,
    container: str,
    quantity: int | str = 1,
    namespace: str | None = None,
    dry_run: bool = False,
    configuration: Configuration = None,
) -> list[Obj]:
    """SIGKILL a container of `quantity` pods through their node's runtime (no API write)."""
    handle = safety.kind_cluster(kubeconfig_of(configuration))
    with _target_pods(configuration, namespace, label_selector, quantity) as (core, _ns, pods):
        out = []
        for p in pods:
            node = p["spec"].get("nodeName") or ""
            safety.check_nodes([to_dict(core.api_client, core.read_node(node))])
            safety.check_kind_container(handle, node)
            status = next((c for c in p["status"].get("containerStatuses") or [] if c["name"] == container), None)
            cid = ((status or {}).get("containerID") or "").partition("://")[2]
            if not status or not cid or "running" not in (status.get("state") or {}):
                raise safety.ChaosRefused(f"pod {p['metadata']['name']} has no running container {container}")
            if not dry_run:
                _record([p])
                _docker(handle, "exec", node, "crictl", "stop", "--timeout", "0", cid)
            out.append(_target(p, container=container, restart_count=int(status.get("restartCount") or 0)))
        return out


def _holder(api: client.ApiClient, component: str) -> str:
    ns = kind.CONTROLLERS[component][0]
    lease = client.CoordinationV1Api(api).read_namespaced_lease(LEASES[component], ns)
    return str((lease.spec.holder_identity if lease.spec else None) or "")


def delete_controller_pod(component: str = "lws", configuration: Configuration = None) -> Obj:
    """Delete the controller pod that holds the component's leader-election Lease."""
    safety.kind_cluster(kubeconfig_of(configuration))
    if component not in kind.CONTROLLERS:
        raise safety.ChaosRefused(f"unknown controller {component!r}; one of {sorted(kind.CONTROLLERS)}")
    ns, deploy = kind.CONTROLLERS[component]
    api = api_client(kubeconfig_of(configuration))
    try:
        core = client.CoreV1Api(api)
        holder = _holder(api, component)
        pods = {p.metadata.name for p in core.list_namespaced_pod(ns).items if p.metadata and p.metadata.name}
        pod = holder.partition("_")[0]
        if pod not in pods or not pod.startswith(f"{deploy}-"):
            raise safety.ChaosRefused(f"the {component} Lease holder {holder!r} is no pod of {ns}/{deploy}")
        core.delete_namespaced_pod(pod, ns)
        return {"deleted": pod, "holder": holder, "deleted_at": time.time()}
    finally:
        api.close()


def wait_new_leader(component: str, deleted: str, within: float = 60, configuration: Configuration = None) -> Obj:
    """Wait until another pod than `deleted` holds the component's Lease; its pod name."""
    ns = kind.CONTROLLERS[component][0]
    api = api_client(kubeconfig_of(configuration))
    started = time.monotonic()
    try:

        def taken(leases: list[Obj]) -> str | None:
            holder = str(((leases or [{}])[0].get("spec") or {}).get("holderIdentity") or "")
            pod = holder.partition("_")[0]
            return pod if pod and pod != deleted else None

        pod = wait_for(
            api,
            client.CoordinationV1Api(api).list_namespaced_lease,
            taken,
            what=f"Lease {ns}/{LEASES[component]}",
            condition=f"held by another pod than the deleted {deleted}",
            timeout=within,
            namespace=ns,
            field_selector=f"metadata.name={LEASES[component]}",
        )
        return {"leader_pod": pod, "after_s": round(time.monotonic() - started, 1)}
    finally:
        api.close()
