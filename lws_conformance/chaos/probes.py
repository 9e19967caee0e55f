"""Steady-state probes for LWS, as a chaostoolkit extension (`module: lws_conformance.chaos.probes`).

The steady state of an LWS under chaos: every group Ready, pod names intact (`L-i`, `L-i-j`),
no group partially running (some pods Ready, others missing or not), no group whose pods carry
mixed template revisions. Probes wait up to `within` seconds for it (recovery takes time; a
point-in-time probe right after a fault would only measure the controller's latency) and return
True, or raise with the violations so the journal says what was wrong.

Names alone cannot tell a kept group from one recreated under the same names: where a fault must
leave the groups alone, `record_pods` (before the fault) and `pods_kept` (after it) compare UIDs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from ..errors import WaitTimeout
from ..k8s import predicates as P
from ..k8s.client import api_client, to_dict
from ..k8s.wait import observe, wait_for
from ..providers import process
from . import safety
from .actions import LWS_PREFIX, Configuration, group_selector, kubeconfig_of, last_fault, namespace_of

Obj = dict[str, Any]
Check = Callable[[Obj, list[Obj]], list[str]]
REVISION = LWS_PREFIX + "template-revision-hash"
# (namespace, LWS name) -> {"uid": the LWS's UID, "pods": pod name -> UID}, set by record_pods
_RECORDED: dict[tuple[str, str], dict[str, Any]] = {}


def _shape(lws: Obj) -> tuple[str, int, int]:
    spec = lws["spec"]
    return lws["metadata"]["name"], int(spec.get("replicas", 1)), int(spec["leaderWorkerTemplate"].get("size", 1))


def names_violations(lws: Obj, pods: list[Obj]) -> list[str]:
    name, replicas, size = _shape(lws)
    expected, have = P.expected_pod_names(name, replicas, size), P.names(pods)
    out = []
    if expected - have:
        out.append(f"missing pods {sorted(expected - have)}")
    if have - expected:
        out.append(f"unexpected pods {sorted(have - expected)}")
    return out


def ready_violations(lws: Obj, pods: list[Obj]) -> list[str]:
    _name, replicas, size = _shape(lws)
    groups = P.by_group(pods)
    out = []
    for i in range(replicas):
        g = groups.get(str(i), [])
        ready = [p for p in g if P.pod_ready(p)]
        if len(ready) != size:
            out.append(f"group {i}: {len(ready)}/{size} pods Ready")
    return out


def partial_violations(lws: Obj, pods: list[Obj]) -> list[str]:
    """A group with some pods Ready and some not (or missing): half a group serves nothing."""
    _name, _replicas, size = _shape(lws)
    out = []
    for idx, g in sorted(P.by_group(pods).items()):
        ready = sum(P.pod_ready(p) for p in g)
        if 0 < ready < size:
            out.append(f"group {idx} partially running: {ready}/{size} Ready")
    return out


def revision_violations(lws: Obj, pods: list[Obj]) -> list[str]:
    out = []
    for idx, g in sorted(P.by_group(pods).items()):
        revs = {(p["metadata"].get("labels") or {}).get(REVISION) for p in g}
        if len(revs) > 1:
            out.append(f"group {idx} mixes revisions {sorted(str(r) for r in revs)}")
    return out


def steady_state_violations(lws: Obj, pods: list[Obj]) -> list[str]:
    """Every violation of the LWS steady state (empty list: steady)."""
    checks: list[Check] = [names_violations, ready_violations, partial_violations, revision_violations]
    return [v for check in checks for v in check(lws, pods)]


# -- chaostoolkit probes -----------------------------------------------------------------------


def _hold(
    check: Check,
    lws: str,
    within: float,
    namespace: str | None,
    configuration: Configuration,
    gone: dict[str, str] | None = None,
) -> float:
    """Wait until `check` finds nothing wrong (and no pod UID in `gone` is still live); return
    the seconds it took. Raises AssertionError saying what was still wrong."""
    api = api_client(kubeconfig_of(configuration))
    try:
        ns = namespace_of(configuration, namespace)
        assert ns, "no namespace: set configuration.namespace or LWSC_NAMESPACE"
        obj = _lws(api, ns, lws)
        last: list[str] = []

        def ok(pods: list[Obj]) -> bool:
            last[:] = check(obj, pods)
            stale = sorted(n for n, u in (gone or {}).items() for p in P.live(pods) if p["metadata"]["uid"] == u)
            if stale:
                last.append(f"pods not yet replaced: {stale}")
            return not last

        started = time.monotonic()
        try:
            wait_for(
                api,
                client.CoreV1Api(api).list_namespaced_pod,
                ok,
                what=f"pods of LWS {ns}/{lws}",
                condition=check.__name__.replace("_violations", "") + " steady",
                timeout=max(float(within), 0.5),
                namespace=ns,
                label_selector=group_selector(lws),
            )
        except WaitTimeout:
            raise AssertionError(f"LWS {ns}/{lws} not steady after {within}s: {'; '.join(last)}") from None
        return round(time.monotonic() - started, 2)
    finally:
        api.close()


def lws_steady(lws: str, within: float = 0, namespace: str | None = None, configuration: Configuration = None) -> bool:
    """All of the below at once."""
    _hold(steady_state_violations, lws, within, namespace, configuration)
    return True


def all_groups_ready(
    lws: str, within: float = 0, namespace: str | None = None, configuration: Configuration = None
) -> bool:
    _hold(ready_violations, lws, within, namespace, configuration)
    return True


def names_intact(
    lws: str, within: float = 0, namespace: str | None = None, configuration: Configuration = None
) -> bool:
    _hold(names_violations, lws, within, namespace, configuration)
    return True


def no_partial_group(
    lws: str, within: float = 0, namespace: str | None = None, configuration: Configuration = None
) -> bool:
    _hold(partial_violations, lws, within, namespace, configuration)
    return True


def no_mixed_revisions(
    lws: str, within: float = 0, namespace: str | None = None, configuration: Configuration = None
) -> bool:
    _hold(revision_violations, lws, within, namespace, configuration)
    return True


def seconds_until_steady(
    lws: str, timeout: float = 60, namespace: str | None = None, configuration: Configuration = None
) -> float:
    """Recovery time: seconds from now until the LWS is steady again (raises after `timeout`)."""
    return _hold(steady_state_violations, lws, timeout, namespace, configuration)


def seconds_to_recover(
    lws: str, timeout: float = 60, namespace: str | None = None, configuration: Configuration = None
) -> float:
    """Recovery time of the latest pod fault: seconds from the fault until every pod it touched
    has been replaced and the LWS is steady (a point-in-time check right after the fault would
    pass before the controller even reacted)."""
    fault = last_fault()
    assert fault, "no pod fault was applied in this process"
    _hold(steady_state_violations, lws, timeout, namespace, configuration, gone=fault["uids"])
    return round(time.monotonic() - float(fault["at"]), 2)


def lws_ready_replicas_at_most(
    lws: str, value: int, within: float = 60, namespace: str | None = None, configuration: Configuration = None
) -> int:
    """Wait until the LWS reports at most `value` ready groups (a fault was noticed); returns it."""
    api = api_client(kubeconfig_of(configuration))
    try:
        ns = namespace_of(configuration, namespace)
        assert ns, "no namespace: set configuration.namespace or LWSC_NAMESPACE"
        custom = client.CustomObjectsApi(api)
        found: Obj = wait_for(
            api,
            custom.list_namespaced_custom_object,
            lambda objs: next(
                (
                    o
                    for o in objs
                    if o["metadata"]["name"] == lws and (o.get("status") or {}).get("readyReplicas", 0) <= value
                ),
                None,
            ),
            what=f"LeaderWorkerSet {ns}/{lws}",
            condition=f"status.readyReplicas <= {value}",
            timeout=within,
            group="leaderworkerset.x-k8s.io",
            version="v1",
            namespace=ns,
            plural="leaderworkersets",
        )
        return int((found.get("status") or {}).get("readyReplicas", 0))
    finally:
        api.close()


def local_components_running(configuration: Configuration = None) -> list[str]:
    """Names of the local cluster's processes that are running; raises if any is down."""

    cluster = safety.local_cluster(kubeconfig_of(configuration), (configuration or {}).get("lwsc_disposable_cluster"))
    recs = cluster.records()
    down = [r.name for r in recs if not process.alive(r)]
    assert not down, f"components down on {cluster.name}: {down}"
    return sorted(r.name for r in recs)


def pod_uids(lws: str, namespace: str | None = None, configuration: Configuration = None) -> dict[str, str]:
    """Pod name -> UID for the LWS (to tell recreated pods from kept ones)."""
    api = api_client(kubeconfig_of(configuration))
    try:
        ns = namespace_of(configuration, namespace)
        assert ns, "no namespace: set configuration.namespace or LWSC_NAMESPACE"
        pods = [
            to_dict(api, p)
            for p in client.CoreV1Api(api).list_namespaced_pod(ns, label_selector=group_selector(lws)).items
        ]
        return {p["metadata"]["name"]: p["metadata"]["uid"] for p in P.live(pods)}
    finally:
        api.close()


def _lws(api: client.ApiClient, ns: str, lws: str) -> Obj:
    return to_dict(
        api,
        client.CustomObjectsApi(api).get_namespaced_custom_object(
            "leaderworkerset.x-k8s.io", "v1", ns, "leaderworkersets", lws
        ),
    )


def _lws_uid(api: client.ApiClient, ns: str, lws: str) -> str:
    return str(_lws(api, ns, lws)["metadata"]["uid"])


def record_pods(lws: str, namespace: str | None = None, configuration: Configuration = None) -> dict[str, str]:
    """Remember the LWS's UID and its live pods' name -> UID, for `pods_kept`; returns the pods'."""
    api = api_client(kubeconfig_of(configuration))
    try:
        ns = namespace_of(configuration, namespace)
        assert ns, "no namespace: set configuration.namespace or LWSC_NAMESPACE"
        pods = pod_uids(lws, ns, configuration)
        assert pods, f"LWS {ns}/{lws} has no live pods to record"
        _RECORDED[(ns, lws)] = {"uid": _lws_uid(api, ns, lws), "pods": pods}
        return pods
    finally:
        api.close()


def kept_violations(recorded: dict[str, str], pods: list[Obj]) -> list[str]:
    """How `pods` (every pod of the LWS, live or being deleted) differ from the recorded name -> UID:
    a recorded pod gone, replaced under its name (another UID) or being deleted, a pod not recorded."""
    now = {p["metadata"]["name"]: p for p in pods}
    out = [f"pod {n} is gone" for n in sorted(set(recorded) - set(now))]
    for name in sorted(set(recorded) & set(now)):
        meta = now[name]["metadata"]
        if meta["uid"] != recorded[name]:
            out.append(f"pod {name} was recreated under its name (uid {recorded[name]} -> {meta['uid']})")
        elif meta.get("deletionTimestamp"):
            out.append(f"pod {name} is being deleted")
    out += [f"pod {n} was not there before" for n in sorted(set(now) - set(recorded))]
    return out


def pods_kept(
    lws: str, within: float = 30, namespace: str | None = None, configuration: Configuration = None
) -> dict[str, str]:
    """For `within` seconds (a watch: every change is checked, not a final sample) the pods recorded
    by `record_pods` stay exactly those, each with its UID, none being deleted, and the LWS keeps
    its UID. Returns the pods' name -> UID; raises AssertionError naming the first change seen."""
    api = api_client(kubeconfig_of(configuration))
    try:
        ns = namespace_of(configuration, namespace)
        assert ns, "no namespace: set configuration.namespace or LWSC_NAMESPACE"
        recorded = _RECORDED.get((ns, lws))
        assert recorded, f"record_pods was not run for LWS {ns}/{lws} before the fault"
        changed = observe(
            api,
            client.CoreV1Api(api).list_namespaced_pod,
            lambda pods: "; ".join(kept_violations(recorded["pods"], pods)),
            duration=float(within),
            namespace=ns,
            label_selector=group_selector(lws),
        )
        assert not changed, f"LWS {ns}/{lws}: the groups were not left alone: {changed}"
        uid = _lws_uid(api, ns, lws)
        assert uid == recorded["uid"], f"LWS {ns}/{lws} was recreated (uid {recorded['uid']} -> {uid})"
        return dict(recorded["pods"])
    finally:
        api.close()
