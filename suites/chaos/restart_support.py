"""What the restart-policy tests share: the LWS under a restart policy, the faults applied to
one of its pods, the waits for the steady state and for a group's recreation, and the
RecreateGroupAfterStart check both of its spellings run. Not a test module."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client

from lws_conformance.testing import Scenario, actions, steady_state_violations, workloads
from lws_conformance.testing import predicates as P

Obj = dict[str, Any]
PFX = "leaderworkerset.sigs.k8s.io/"
HOLD_GATE = "lwsc.x-k8s.io/hold-workers"


# seconds (x timeouts.scale): a group rebuilt and steady again takes 0.2-0.35 s on the idle local
# cluster (the restart-storm figures), ~1-3 s under load. Only a group never rebuilt pays it, e.g.
# each try lws#998's race hits (1 in ~30 deletions); it was 45 s.
RECOVERY = 20.0
WINDOW = 4.0  # seconds watched for "nothing is recreated"


def restart_lws(name: str, policy: str, replicas: int = 2, size: int = 3, queue: str | None = None, **kw: Any) -> Obj:
    obj = workloads.lws(name, replicas=replicas, size=size, queue=queue, **kw)
    obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = policy
    return obj


def chaos_config(sc: Scenario) -> dict[str, Any]:
    return {"kubeconfig": str(sc.cluster.kubeconfig), "namespace": sc.namespace}


def steady(sc: Scenario, lws: Obj, timeout: float = 60) -> dict[str, str]:
    """Wait for the LWS steady state; return pod name -> UID."""
    pods = sc.wait_pods(
        lambda ps: ps if not steady_state_violations(lws, ps) else None,
        f"LWS {lws['metadata']['name']}: every group Ready, names intact, one revision per group",
        timeout=timeout,
        selector=f"{PFX}name={lws['metadata']['name']}",
    )
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in P.live(pods)}


def group_uids(uids: dict[str, str], name: str, group: int) -> dict[str, str]:
    return {n: u for n, u in uids.items() if n == f"{name}-{group}" or n.startswith(f"{name}-{group}-")}


def wait_group_recreated(sc: Scenario, lws: Obj, group: int, old: dict[str, str], timeout: float) -> dict[str, str]:
    """Wait until every pod of `group` has a new UID, the same name and group index, and the
    LWS is steady again; return the new name -> UID map."""
    name = lws["metadata"]["name"]
    old_group = group_uids(old, name, group)

    def rebuilt(ps: list[Obj]) -> list[Obj] | None:
        live = P.live(ps)
        new = {p["metadata"]["name"]: p for p in live if p["metadata"]["name"] in old_group}
        if set(new) != set(old_group) or any(p["metadata"]["uid"] == old_group[n] for n, p in new.items()):
            return None
        if any((p["metadata"].get("labels") or {}).get(PFX + "group-index") != str(group) for p in new.values()):
            return None
        return live if not steady_state_violations(lws, live) else None

    pods = sc.wait_pods(
        rebuilt,
        f"every pod of group {group} ({sorted(old_group)}) recreated with its name and group index, LWS steady",
        timeout=timeout,
        selector=f"{PFX}name={name}",
    )
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}


def apply_fault(sc: Scenario, fault: str, name: str, group: int, worker: int) -> None:
    sel = actions.group_selector(name, group, worker)
    if fault == "restart":
        out = actions.restart_containers(sel, 1, configuration=chaos_config(sc))
        assert out and out[0]["restart_count"] >= 1, out
    else:
        actions.kill_pods(sel, 1, configuration=chaos_config(sc))


def recreate_group_events(sc: Scenario) -> list[Obj]:
    """RecreateGroup events from the events.k8s.io/v1 API (raw JSON: the Python client's model
    rejects events without eventTime)."""
    resp = client.EventsV1Api(sc.api).list_namespaced_event(sc.namespace, _preload_content=False)
    return [e for e in json.loads(resp.data)["items"] if e.get("reason") == "RecreateGroup"]


def recreate_group_reported(sc: Scenario, group: int) -> list[Obj]:
    """The RecreateGroup events, once one for `group` exists. The controller's recorder sends
    events on its own schedule, so the recreated group's pods may be back before its event is
    stored: waited for through core/v1 Events (the same objects), then read as events.k8s.io/v1."""
    suffix = f"to recreate group {group}"
    sc.wait_in_namespace(
        sc.core.list_namespaced_event,
        "Events",
        lambda evs: [e for e in evs if e.get("reason") == "RecreateGroup" and str(e.get("message")).endswith(suffix)],
        f"a RecreateGroup event ending {suffix!r}",
        timeout=RECOVERY,
    )
    return recreate_group_events(sc)


# -- RecreateGroupAfterStart -------------------------------------------------------------------


def waits_until_started(sc: Scenario, obj: Obj, form: str) -> None:
    """The recreate-after-start promise for `obj` (one group of 3, restartPolicy and annotation
    as the caller set them; `form` names them in messages): while the workers are Pending behind
    a scheduling gate a leader container restart recreates nothing; once every pod runs, the
    recorded restart rebuilds the whole group, with a RecreateGroup event."""
    name = obj["metadata"]["name"]
    policy = obj["spec"]["leaderWorkerTemplate"]["restartPolicy"]
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["schedulingGates"] = [{"name": HOLD_GATE}]
    lws = sc.create(obj)
    assert lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] == policy, lws["spec"]
    workers = [f"{name}-0-1", f"{name}-0-2"]
    pods = sc.wait_pods(
        lambda ps: (
            ps
            if P.names(ps) == {f"{name}-0", *workers}
            and all(P.pod_ready(p) for p in P.live(ps) if p["metadata"]["name"] == f"{name}-0")
            and all(P.gated(p, HOLD_GATE) for p in P.live(ps) if p["metadata"]["name"] in workers)
            else None
        ),
        f"leader {name}-0 Ready, workers {workers} Pending behind {HOLD_GATE}",
    )
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in P.live(pods)}
    apply_fault(sc, "restart", name, 0, 0)
    changed = sc.observe_pods(
        lambda ps: (
            {p["metadata"]["name"] for p in ps if before.get(p["metadata"]["name"]) != p["metadata"]["uid"]}
            or (None if len(P.live(ps)) == len(before) else "a pod was deleted")
        ),
        duration=WINDOW,
    )
    assert changed is None, f"{form} recreated a group that had not started: {changed}"
    # Ungating the workers starts the group; the leader's recorded restart now counts.
    for w in workers:
        sc.core.patch_namespaced_pod(w, sc.namespace, [{"op": "remove", "path": "/spec/schedulingGates"}])
    sc.wait_pods(
        lambda ps: (
            ps
            if {p["metadata"]["name"] for p in P.live(ps)} == set(before)
            and not {p["metadata"]["uid"] for p in P.live(ps)} & set(before.values())
            else None
        ),
        f"every pod of group 0 ({sorted(before)}) recreated once the group had started",
        timeout=RECOVERY,
    )
    assert any(e["note"].endswith("to recreate group 0") for e in recreate_group_reported(sc, 0)), (
        "no RecreateGroup event in events.k8s.io/v1"
    )
