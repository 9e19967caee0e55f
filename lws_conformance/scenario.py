"""What a suite test works with: one namespace, its objects, and waits that explain themselves.

Every wait here goes through `k8s.wait` (list + watch + deadline) and attaches, on timeout, the
namespace's recent events and the controller log paths, so a red test says what happened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from .k8s import manager_config
from .k8s import predicates as P
from .k8s.logs import deployment_log, file_size, json_log_records, json_records
from .k8s.objects import API_VERSIONS, CLUSTER_SCOPED, CLUSTER_SCOPED_READ, Objects, gvp
from .k8s.wait import Predicate, observe, raw_body, wait_for
from .providers.base import PLAIN_PODS, ClusterHandle
from .providers.kind import CONTROLLERS

LWS_GROUP, LWS_VERSION, LWS_PLURAL = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"
LWS_API = f"{LWS_GROUP}/{LWS_VERSION}"
Obj = dict[str, Any]
# built-in kinds `Scenario.wait_objects` and `list_objects` read: (client, the list call's resource)
BUILT_IN = {
    "Pod": ("core", "pod"),
    "Service": ("core", "service"),
    "Event": ("core", "event"),
    "PersistentVolumeClaim": ("core", "persistent_volume_claim"),
    "ResourceQuota": ("core", "resource_quota"),
    "StatefulSet": ("apps", "stateful_set"),
    "ControllerRevision": ("apps", "controller_revision"),
    "Lease": ("coordination", "lease"),
}
CLUSTER_BUILT_IN = {"Node": ("core", "node")}
NEEDS_KUBELET = (
    "not-run on the local cluster: needs a real kubelet (kwok runs no container); "
    "run it on kind (`lwsc --profile kind run`) or a cluster of yours"
)

# The local skip of a check whose simulated-kubelet twin (`require_simulated_kubelet`) checks the
# same requirement here: next to the twin's outcome it leaves no case unchecked (verdicts.combine).
SIMULATED_HERE = "not-run on the local cluster: its simulated-kubelet variant {twin} checks the same here; "

NEEDS_KIND = (
    "not-run: the fault touches the node containers or controller pods of a kind cluster lwsc "
    "brought up; run it with `lwsc --profile kind run`"
)


@dataclass
class Scenario:
    api: client.ApiClient
    cluster: ClusterHandle
    namespace: str
    objects: Objects
    # resourceVersion of this test's last write of each LWS (create/patch_lws), for `settled` on
    # LWS versions without status.observedGeneration
    written: dict[str, int] = field(default_factory=dict)
    # called when the test simulates the kubelet (`require_simulated_kubelet`): the plugin marks
    # where it ran "simulated kubelet"
    simulating: Callable[[], None] | None = None
    # byte offset of each local controller's log when the test began: evidence reads from there
    log_offsets: dict[str, int] = field(default_factory=dict)
    # checks a suite helper adds for what it shares with other tests: after a failure, each names
    # how others' objects kept this test from a verdict, or returns None (`interfered`)
    interference: list[Callable[[], str | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        logs = getattr(self.cluster, "logs", None) or {}
        for component in ("lws", "kueue"):
            if component in logs and component not in self.log_offsets:
                self.log_offsets[component] = file_size(logs[component])

    def interfered(self) -> str | None:
        """The first `interference` check's message (the plugin makes the failed test's
        requirements read error with it), or None. A check that cannot read the cluster finds
        nothing: the failure then stands as it is."""
        for check in self.interference:
            try:
                found = check()
            except Exception:  # noqa: BLE001 - evidence unreadable: no claim of interference
                found = None
            if found:
                return found
        return None

    # -- clients -------------------------------------------------------------------------
    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def apps(self) -> client.AppsV1Api:
        return client.AppsV1Api(self.api)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    def require_real_kubelet(self, simulated_by: str = "") -> None:
        """Skip (not-run) on the local cluster, whose kwok nodes run no container: for checks of
        what a running process sees or does. `simulated_by`: the test function that checks the
        same requirements here with a simulated kubelet (its skip is then no gap)."""
        if self.cluster.provider == "local":
            import pytest  # only suites call this

            pytest.skip(SIMULATED_HERE.format(twin=simulated_by) + NEEDS_KUBELET if simulated_by else NEEDS_KUBELET)

    def require_kind(self, chaos_node: bool = False, simulated_by: str = "") -> str:
        """Skip (not-run) unless the cluster is a kind cluster lwsc brought up, and with
        `chaos_node` one with a chaos node; returns the chaos node's name (or ""). `simulated_by`
        as for `require_real_kubelet`."""
        import pytest  # only suites call this

        if self.cluster.provider != "kind":
            pytest.skip(SIMULATED_HERE.format(twin=simulated_by) + NEEDS_KIND if simulated_by else NEEDS_KIND)
        node = self.cluster.endpoints.get("kind-chaos-node", "")
        if chaos_node and not node:
            pytest.skip(
                "not-run: this kind cluster has no chaos node (`kind.chaos_node` was false, or it was "
                "brought up by an older lwsc): `lwsc --profile kind down` and `up` again"
            )
        return node

    def require_kwok(self, what: str) -> None:
        """Skip (not-run) unless kwok backs Nodes here (the local provider): for a scenario that
        adds Nodes of its own (`what`) and needs them Ready and running pods."""
        if self.cluster.provider != "local":
            import pytest  # only suites call this

            pytest.skip(f"not-run: the test {what}, which only kwok (the local provider) keeps Ready and running")

    def require_kueue_plain_pods(self) -> None:
        """Skip (not-run) unless Kueue manages plain Pods here: its Configuration lists the `pod`
        integration (implied by the LWS integration alone, its reconciler skips plain Pods)."""
        import pytest  # only suites call this

        if self.cluster.provider == "local":
            if PLAIN_PODS not in self.cluster.capabilities:
                pytest.skip(
                    "not-run: this local cluster's Kueue was configured by an older lwsc, without the "
                    "`pod` integration: `lwsc down` and `lwsc up` again"
                )
            return
        listed, why = manager_config.kueue_frameworks(self.api)
        if listed is None:
            pytest.skip(f"not-run: whether Kueue manages plain Pods here is unknown: {why}")
        if "pod" not in listed:
            pytest.skip(
                "not-run: Kueue's configuration does not list the `pod` integration "
                f"(integrations.frameworks: {sorted(listed)}), so it manages no plain Pod here"
            )

    def require_simulated_kubelet(self, what: str) -> None:
        """Skip (not-run) where real kubelets run: for a scenario that writes what a kubelet
        would report (`what`), which a real kubelet overwrites at its next status sync."""
        if self.cluster.provider != "local":
            import pytest  # only suites call this

            pytest.skip(f"not-run on real kubelets: the test {what} by patching pod status, which a kubelet overwrites")
        if self.simulating is not None:
            self.simulating()

    def controller_log_records(self, component: str, msg: str) -> list[Obj] | None:
        """The records of controller `component`'s ("lws", "kueue") JSON log whose "msg" is `msg`:
        from the local cluster's log file, or on kind from the controller's pods through the API
        server (pods/log); None where neither can be read (another provider's controllers, a token
        without pods/log)."""
        path = (getattr(self.cluster, "logs", None) or {}).get(component)
        if path:
            return json_log_records(path, msg)
        if self.cluster.provider == "kind" and component in CONTROLLERS:
            text = deployment_log(self.api, *CONTROLLERS[component])
            return None if text is None else json_records(text.splitlines(), msg)
        return None

    # -- objects -------------------------------------------------------------------------
    def create(self, obj: Obj) -> Obj:
        created = self.objects.create(obj)
        if obj.get("kind") == "LeaderWorkerSet":
            self._wrote(created)
        return created

    def lws(self, name: str) -> Obj:
        return self.objects.get("LeaderWorkerSet", LWS_API, name)

    def patch_lws(self, name: str, body: Any) -> Obj:
        return self._wrote(self.objects.patch("LeaderWorkerSet", LWS_API, name, body))

    def _wrote(self, lws: Obj) -> Obj:
        meta = lws.get("metadata") or {}
        if meta.get("name") and str(meta.get("resourceVersion") or "").isdigit():
            self.written[meta["name"]] = int(meta["resourceVersion"])
        return lws

    def pods(self, selector: str | None = None) -> list[Obj]:
        return self._items(self.core.list_namespaced_pod, "Pod", label_selector=selector or "")

    def statefulsets(self) -> list[Obj]:
        return self._items(self.apps.list_namespaced_stateful_set, "StatefulSet")

    def services(self) -> list[Obj]:
        return self._items(self.core.list_namespaced_service, "Service")

    def revisions(self) -> list[Obj]:
        return self._items(self.apps.list_namespaced_controller_revision, "ControllerRevision")

    def events(self) -> list[Obj]:
        return self._items(self.core.list_namespaced_event, "Event")

    def _items(self, list_fn: Any, kind: str, **kwargs: Any) -> list[Obj]:
        """The namespace's objects of one list call, as the raw JSON dicts the waits see (`k8s.wait`)."""
        items = raw_body(self.api, list_fn(self.namespace, _preload_content=False, **kwargs)).get("items") or []
        for item in items:
            item.setdefault("kind", kind)
        return list(items)

    # -- waits ---------------------------------------------------------------------------
    def diagnose(self) -> str:
        events = self.events()[-12:]
        ev = "\n  ".join(
            f"{(e.get('involvedObject') or {}).get('kind')}/{(e.get('involvedObject') or {}).get('name')} "
            f"{e.get('reason')}: {e.get('message')}"
            for e in events
        )
        logs = ", ".join(f"{k}: {v}" for k, v in sorted(self.cluster.logs.items()) if k in ("lws", "kueue"))
        return f"recent events in {self.namespace}:\n  {ev or 'none'}\ncontroller logs: {logs or 'n/a'}"

    def wait_in_namespace(
        self, list_fn: Any, what: str, predicate: Predicate, condition: str, timeout: float = 60, **kwargs: Any
    ) -> Any:
        """`wait_for` over one of this namespace's lists, with the namespace's diagnostics."""
        return wait_for(
            self.api,
            list_fn,
            predicate,
            what=f"{what} in {self.namespace}",
            condition=condition,
            timeout=timeout,
            diagnose=self.diagnose,
            namespace=self.namespace,
            **kwargs,
        )

    def node_labels(self) -> dict[str, dict[str, str]]:
        """Node name -> its labels, for every node of the cluster."""
        nodes = raw_body(self.api, self.core.list_node(_preload_content=False))["items"]
        return {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in nodes}

    def wait_pods(self, predicate: Predicate, condition: str, timeout: float = 60, selector: str = "") -> Any:
        what = "pods" + (f" ({selector})" if selector else "")
        return self.wait_in_namespace(
            self.core.list_namespaced_pod, what, predicate, condition, timeout, label_selector=selector
        )

    def wait_statefulsets(self, predicate: Predicate, condition: str, timeout: float = 60) -> Any:
        return self.wait_in_namespace(
            self.apps.list_namespaced_stateful_set, "StatefulSets", predicate, condition, timeout
        )

    def wait_services(self, predicate: Predicate, condition: str, timeout: float = 60) -> Any:
        return self.wait_in_namespace(self.core.list_namespaced_service, "Services", predicate, condition, timeout)

    def settled(self, replicas: int, updated: int | None = None) -> Any:
        """`predicates.lws_settled` for this cluster's LWS version, with its status `current`."""
        check = P.lws_settled(replicas, updated, versions=self.cluster.versions)
        return lambda lws: self.current(lws) and bool(check(lws))

    def current(self, lws: Obj) -> bool:
        """Was this LWS's status written for the spec this test last wrote? status.observedGeneration
        says so since LWS v0.9.0. Before, it does not exist, and a status from before the test's
        last write (create/patch_lws) would pass for a current one: there the LWS must carry a
        write newer than the test's. Only the controller writes an LWS after the test, and it
        writes status with Update (a resourceVersion precondition; v0.8.0
        leaderworkerset_controller.go L524), so such a status was computed from the spec as the
        test left it."""
        meta, st = lws["metadata"], lws.get("status") or {}
        if P.lws_has_observed_generation(self.cluster.versions) or st.get("observedGeneration") is not None:
            return bool(st.get("observedGeneration") == meta["generation"])
        return int(meta.get("resourceVersion") or 0) > self.written.get(meta["name"], 0)

    def wait_lws(self, name: str, predicate: Any, condition: str, timeout: float = 60) -> Obj:
        """Wait until `predicate(lws)` holds for the LWS named `name`; returns the LWS."""

        def check(objs: list[Obj]) -> Obj | None:
            mine = [o for o in objs if o["metadata"]["name"] == name]
            return mine[0] if mine and predicate(mine[0]) else None

        result: Obj = wait_for(
            self.api,
            self.custom.list_namespaced_custom_object,
            check,
            what=f"LeaderWorkerSet {self.namespace}/{name}",
            condition=condition,
            timeout=timeout,
            diagnose=self.diagnose,
            group=LWS_GROUP,
            version=LWS_VERSION,
            namespace=self.namespace,
            plural=LWS_PLURAL,
        )
        return result

    def wait_gone(self, list_fn: Any, condition: str, timeout: float = 60, **kwargs: Any) -> None:
        wait_for(
            self.api,
            list_fn,
            lambda objs: not objs,
            what=f"objects in {self.namespace}",
            condition=condition,
            timeout=timeout,
            diagnose=self.diagnose,
            **kwargs,
        )

    # -- any kind ------------------------------------------------------------------------
    def lister(
        self, kind: str, selector: str = "", namespace: str | None = None, field_selector: str = ""
    ) -> tuple[Callable[..., Any], dict[str, Any]]:
        """The list call of the Python client for `kind` and its arguments: the test's namespace
        (or `namespace`) for a namespaced kind, the whole cluster for a cluster-scoped one; the
        label `selector` and `field_selector` when given."""
        extra = {"label_selector": selector} if selector else {}
        if field_selector:
            extra["field_selector"] = field_selector
        if kind in BUILT_IN or kind in CLUSTER_BUILT_IN:
            api_name, resource = BUILT_IN.get(kind) or CLUSTER_BUILT_IN[kind]
            api = {"core": self.core, "apps": self.apps, "coordination": client.CoordinationV1Api(self.api)}[api_name]
            if kind in CLUSTER_BUILT_IN:
                return getattr(api, f"list_{resource}"), extra
            return getattr(api, f"list_namespaced_{resource}"), {"namespace": namespace or self.namespace, **extra}
        group, version, plural = gvp(kind, API_VERSIONS[kind])
        where = {"group": group, "version": version, "plural": plural, **extra}
        if kind in CLUSTER_SCOPED or kind in CLUSTER_SCOPED_READ:
            return self.custom.list_cluster_custom_object, where
        return self.custom.list_namespaced_custom_object, {"namespace": namespace or self.namespace, **where}

    def list_objects(
        self, kind: str, selector: str = "", namespace: str | None = None, field_selector: str = ""
    ) -> list[Obj]:
        """Every object of `kind` (in the test's namespace, or `namespace`, unless cluster-scoped)
        matching the label `selector` (and `field_selector`), as plain dicts with their `kind`."""
        list_fn, kwargs = self.lister(kind, selector, namespace, field_selector)
        items = raw_body(self.api, list_fn(**kwargs, _preload_content=False)).get("items") or []
        return [{**item, "kind": item.get("kind") or kind} for item in items]

    def wait_objects(
        self,
        kind: str,
        predicate: Predicate,
        condition: str,
        timeout: float = 60,
        selector: str = "",
        namespace: str | None = None,
        what: str | None = None,
        field_selector: str = "",
    ) -> Any:
        """`wait_for` over the objects of `kind` (as `list_objects` selects them) until
        `predicate(objects)` returns something truthy; that value. `timeout` is plain seconds
        (`wait_for` applies `timeouts.scale`); a timeout names `what` (default: the kind, selector
        and namespace), the condition, what was last seen and the namespace's events."""
        list_fn, kwargs = self.lister(kind, selector, namespace, field_selector)
        scoped = kind in CLUSTER_SCOPED or kind in CLUSTER_SCOPED_READ or kind in CLUSTER_BUILT_IN
        where = "" if scoped else f" in {namespace or self.namespace}"
        return wait_for(
            self.api,
            list_fn,
            predicate,
            what=what or f"{kind} objects{f' ({selector})' if selector else ''}{where}",
            condition=condition,
            timeout=timeout,
            diagnose=self.diagnose,
            **kwargs,
        )

    def wait_objects_gone(
        self,
        kind: str,
        condition: str,
        timeout: float = 60,
        selector: str = "",
        namespace: str | None = None,
        what: str | None = None,
        field_selector: str = "",
    ) -> None:
        """`wait_objects` until no object of `kind` matching `selector` (and `field_selector`) is left."""
        self.wait_objects(kind, lambda objs: not objs, condition, timeout, selector, namespace, what, field_selector)

    def observe_objects(
        self, kind: str, violation: Predicate, duration: float, selector: str = "", namespace: str | None = None
    ) -> Any:
        """Watch the objects of `kind` for `duration` seconds (`observe` applies `timeouts.scale`);
        the first truthy `violation(objects)`, else None."""
        list_fn, kwargs = self.lister(kind, selector, namespace)
        return observe(self.api, list_fn, violation, duration=duration, **kwargs)

    def observe_pods(self, violation: Predicate, duration: float, selector: str = "") -> Any:
        return observe(
            self.api,
            self.core.list_namespaced_pod,
            violation,
            duration=duration,
            namespace=self.namespace,
            label_selector=selector,
        )
