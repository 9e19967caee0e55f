"""`lwsc chaos-target`: what the standalone experiments in chaos/ need, in one command.

Every experiment acts on an LWS (default name `chaos`) in a namespace carrying the harness's run
label (faults refuse any other namespace). This creates that namespace and LWS (re-creating the
LWS if one exists), waits until it is steady and prints the environment `chaos run` reads. With
`node`, the LWS has one group of 2 pods pinned to that node: what chaos/node-failure.yaml and, on
kind, chaos/node-container-pause.yaml (the chaos node) need.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from . import workloads
from .chaos import probes
from .errors import UserError
from .k8s.client import api_client
from .k8s.objects import RUN_LABEL
from .k8s.wait import wait_for
from .providers.kind import CHAOS_TOLERATION

TARGET_RUN = "chaos-target"  # the run label value: `lwsc cleanup --run-id chaos-target` removes it


def manifest(name: str, node: str | None, hostname_label: str = "kubernetes.io/hostname") -> dict[str, Any]:
    """The target LWS: 2 groups of 3 (RecreateGroupOnPodRestart), or 1 group of 2 on `node`."""
    obj = workloads.lws(name, replicas=1 if node else 2, size=2 if node else 3)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    lwt["restartPolicy"] = "RecreateGroupOnPodRestart"
    if node:  # tolerating the kind chaos node's taint too (chaos/node-container-pause.yaml)
        for key in ("leaderTemplate", "workerTemplate"):
            lwt[key]["spec"]["nodeSelector"] = {hostname_label: node}
            lwt[key]["spec"]["tolerations"] = [dict(CHAOS_TOLERATION)]
    return obj


def create(kubeconfig: str, namespace: str, name: str, node: str | None, timeout: float = 120) -> dict[str, str]:
    """Namespace (run label) + LWS `name`, steady; returns the env `chaos run` needs."""
    api = api_client(kubeconfig)
    try:
        core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
        if node:
            try:
                core.read_node(node)
            except ApiException as exc:
                msg = f"node {node} not found; pick one from `kubectl get nodes -l lwsc.x-k8s.io/managed`"
                raise UserError(msg) from exc
        wait_for(  # a namespace still terminating (e.g. just after `lwsc cleanup`) is gone first
            api,
            core.list_namespace,
            lambda objs: not [o for o in objs if o["metadata"].get("deletionTimestamp")],
            what=f"namespace {namespace}",
            condition="not terminating",
            timeout=timeout,
            field_selector=f"metadata.name={namespace}",
        )
        try:
            core.create_namespace(
                client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace, labels={RUN_LABEL: TARGET_RUN}))
            )
        except ApiException as exc:
            if exc.status != 409:
                raise
            labels = core.read_namespace(namespace).metadata.labels or {}  # type: ignore[union-attr]
            if not labels.get(RUN_LABEL):
                msg = f"namespace {namespace} exists without the {RUN_LABEL} label; choose another --namespace"
                raise UserError(msg) from None
        group: dict[str, Any] = {"group": workloads.LWS_GROUP, "version": workloads.LWS_VERSION}
        group.update(namespace=namespace, plural=workloads.LWS_PLURAL)
        try:
            custom.delete_namespaced_custom_object(name=name, **group)
            wait_for(
                api,
                custom.list_namespaced_custom_object,
                lambda objs: not objs,
                what=f"LWS {name} in {namespace}",
                condition="deleted (re-created fresh)",
                timeout=timeout,
                field_selector=f"metadata.name={name}",
                **group,
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
        custom.create_namespaced_custom_object(body=manifest(name, node), **group)
    finally:
        api.close()
    cfg = {"kubeconfig": kubeconfig, "namespace": namespace}
    probes.seconds_until_steady(name, timeout, configuration=cfg)
    env = {"LWSC_KUBECONFIG": kubeconfig, "LWSC_NAMESPACE": namespace, "LWSC_LWS": name}
    return {**env, **({"LWSC_NODE": node} if node else {})}
