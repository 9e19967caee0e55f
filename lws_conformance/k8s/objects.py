"""Creating, reading and deleting the custom objects suites use (LWS, Kueue), by kind.

Custom resources go through `CustomObjectsApi`; the plural comes from a small table instead of a
discovery round trip per call. Every object created through `Objects` carries the run label, so a
crashed run can be swept by label and chaos can tell harness-owned objects apart.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

RUN_LABEL = "lwsc.x-k8s.io/run"
PLURALS = {
    "LeaderWorkerSet": "leaderworkersets",
    "DisaggregatedSet": "disaggregatedsets",
    "DisaggregatedSetRoleScaler": "disaggregatedsetrolescalers",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "ResourceFlavor": "resourceflavors",
    "Topology": "topologies",
    "Workload": "workloads",
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "MultiKueueCluster": "multikueueclusters",
    "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
}
_KUEUE = "kueue.x-k8s.io/v1beta2"
_ADMISSION = "admissionregistration.k8s.io/v1"
_DS = "disaggregatedset.x-k8s.io/v1"
# the API version each custom kind of PLURALS is listed and watched by
API_VERSIONS = {
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
    "DisaggregatedSet": _DS,
    "DisaggregatedSetRoleScaler": _DS,
    "ClusterQueue": _KUEUE,
    "LocalQueue": _KUEUE,
    "ResourceFlavor": _KUEUE,
    "Topology": _KUEUE,
    "Workload": _KUEUE,
    "WorkloadPriorityClass": _KUEUE,
    "MultiKueueCluster": _KUEUE,
    "ValidatingAdmissionPolicy": _ADMISSION,
    "ValidatingAdmissionPolicyBinding": _ADMISSION,
}
# cluster-scoped kinds suites read but never create (lwsc up creates them)
CLUSTER_SCOPED_READ = {"MultiKueueCluster"}
# cluster-scoped kinds suites create (named per test), with the API version a sweep lists them by
CLUSTER_SCOPED = {
    "ClusterQueue": _KUEUE,
    "ResourceFlavor": _KUEUE,
    "Topology": _KUEUE,
    "WorkloadPriorityClass": _KUEUE,
    "ValidatingAdmissionPolicy": _ADMISSION,  # API faults a test injects (destructive tests only)
    "ValidatingAdmissionPolicyBinding": _ADMISSION,
}


def gvp(obj_or_kind: dict[str, Any] | str, api_version: str | None = None) -> tuple[str, str, str]:
    if isinstance(obj_or_kind, dict):
        kind, api_version = obj_or_kind["kind"], obj_or_kind["apiVersion"]
    else:
        kind = obj_or_kind
    assert api_version, "api_version is required with a bare kind"
    group, _, version = api_version.rpartition("/")
    return group, version, PLURALS[kind]


@dataclass
class Objects:
    """Object operations scoped to one run (and optionally one namespace)."""

    api: client.ApiClient
    run_id: str
    namespace: str | None = None
    created: list[tuple[str, str, str, str | None, str]] = field(default_factory=list)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("labels", {})[RUN_LABEL] = self.run_id
        group, version, plural = gvp(obj)
        if obj["kind"] in CLUSTER_SCOPED:
            out = self.custom.create_cluster_custom_object(group, version, plural, obj)
            ns: str | None = None
        else:
            ns = meta.get("namespace") or self.namespace
            assert ns, f"{obj['kind']} needs a namespace"
            out = self.custom.create_namespaced_custom_object(group, version, ns, plural, obj)
        self.created.append((group, version, plural, ns, meta["name"]))
        return cast(dict[str, Any], out)

    def get(self, kind: str, api_version: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        group, version, plural = gvp(kind, api_version)
        if kind in CLUSTER_SCOPED:
            out = self.custom.get_cluster_custom_object(group, version, plural, name)
        else:
            out = self.custom.get_namespaced_custom_object(group, version, self._ns(namespace), plural, name)
        return cast(dict[str, Any], out)

    def patch(
        self, kind: str, api_version: str, name: str, body: Any, namespace: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """A merge patch (`body` a dict) or a JSON patch (`body` a list of operations); with `dry_run`
        the API server runs admission as for a real write and stores nothing."""
        group, version, plural = gvp(kind, api_version)
        opts: dict[str, Any] = {"dry_run": "All"} if dry_run else {}
        if isinstance(body, list):
            opts["_content_type"] = "application/json-patch+json"
        out = self.custom.patch_namespaced_custom_object(
            group, version, self._ns(namespace), plural, name, body, **opts
        )
        return cast(dict[str, Any], out)

    def delete(self, kind: str, api_version: str, name: str, namespace: str | None = None) -> None:
        """Delete one object now (a test's step, e.g. ending a fault it injected); gone already is fine."""
        group, version, plural = gvp(kind, api_version)
        try:
            if kind in CLUSTER_SCOPED:
                self.custom.delete_cluster_custom_object(group, version, plural, name)
            else:
                self.custom.delete_namespaced_custom_object(group, version, self._ns(namespace), plural, name)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def _ns(self, namespace: str | None) -> str:
        ns = namespace or self.namespace
        assert ns, "a namespace is required"
        return ns

    def delete_created(self) -> None:
        """Delete what this run created, newest first; already-gone objects are fine."""
        for group, version, plural, ns, name in reversed(self.created):
            try:
                if ns is None:
                    self.custom.delete_cluster_custom_object(group, version, plural, name)
                else:
                    self.custom.delete_namespaced_custom_object(group, version, ns, plural, name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        self.created.clear()


def list_cluster_scoped(api: client.ApiClient, selector: str) -> list[tuple[str, dict[str, Any]]]:
    """(kind, object) for every cluster-scoped object of `CLUSTER_SCOPED` matching `selector`; none
    of the Kueue kinds if Kueue is not installed on this cluster, none of the admission policies
    where the caller may not list them (the in-cluster runner, which may not create them either)."""
    custom = client.CustomObjectsApi(api)
    out: list[tuple[str, dict[str, Any]]] = []
    for kind, api_version in sorted(CLUSTER_SCOPED.items()):
        group, version, plural = gvp(kind, api_version)
        try:
            listing = cast(
                dict[str, Any], custom.list_cluster_custom_object(group, version, plural, label_selector=selector)
            )
        except ApiException as exc:
            if exc.status == 404 or (exc.status == 403 and api_version == _ADMISSION):
                continue
            raise
        out += [(kind, item) for item in listing["items"]]
    return out


def sweep_run(api: client.ApiClient, run_id: str) -> None:
    """Delete every namespace and cluster-scoped object labelled with `run_id`."""
    selector = f"{RUN_LABEL}={run_id}"
    core = client.CoreV1Api(api)
    for ns in core.list_namespace(label_selector=selector).items:
        try:
            core.delete_namespace(cast(str, ns.metadata and ns.metadata.name))
        except ApiException as exc:
            if exc.status != 404:
                raise
    custom = client.CustomObjectsApi(api)
    for kind, item in list_cluster_scoped(api, selector):
        group, version, plural = gvp(kind, CLUSTER_SCOPED[kind])
        try:
            custom.delete_cluster_custom_object(group, version, plural, item["metadata"]["name"])
        except ApiException as exc:
            if exc.status != 404:
                raise
