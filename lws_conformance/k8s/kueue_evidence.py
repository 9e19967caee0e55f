"""What Kueue's objects and log show: why a Workload has no quota, how its pods are named (pure,
no cluster).

A known Kueue bug is reported only with evidence of its cause (fixtures/known-deviations.yaml):
the API server refusing Kueue's admission of a Workload, as Kueue's scheduler logs it; or a TAS
reason naming a domain Kueue counted room in while a rack had a node with room for the group, as
the cluster stood when Kueue wrote that reason. These functions read that evidence from listed
objects and log records; the suites' helpers fetch them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..profile import Topology
from . import predicates as P
from .clock import SECOND, parse_stamp
from .wait import scale

Obj = dict[str, Any]
# Kueue's scheduler, when the API server refuses the admission it writes (scheduler.go@v0.17.0).
COULD_NOT_ADMIT = "Could not admit Workload and assign flavors in apiserver"
# Kueue's TAS reason when it finds no domain for a PodSet group (tas_flavor_snapshot.go@v0.17.0
# notFitMessage), for a group whose two PodSets both count one pod: `fit` is the count of the
# domain it settled on, as its snapshot saw it.
ONE_POD_NO_FIT = re.compile(
    r'couldn\'t assign flavors to pod set \S+: topology "[^"]+" allows to fit only (?P<fit>\d+) out of 1 pod\(s\)'
)
UNSCHEDULABLE_TAINTS = ("NoSchedule", "NoExecute")


def admission_refusals(records: list[Obj], namespace: str, name: str) -> dict[str, int]:
    """Kueue's COULD_NOT_ADMIT log records of Workload `namespace`/`name`: the API server's error
    -> how many times Kueue logged it."""
    out: dict[str, int] = {}
    for r in records:
        wl = r.get("workload")
        if r.get("msg") != COULD_NOT_ADMIT or not isinstance(wl, dict):
            continue
        if wl.get("name") == name and wl.get("namespace") == namespace:
            err = str(r.get("error") or "").strip() or "(no error logged)"
            out[err] = out.get(err, 0) + 1
    return out


RECONCILER_ERROR = "Reconciler error"  # controller-runtime's record of a reconcile that returned an error


def reconciler_errors(records: list[Obj], namespace: str, names: set[str]) -> dict[str, int]:
    """A controller's RECONCILER_ERROR log records for the objects `names` of `namespace` (the
    record's "namespace" and "name"): the error -> how many times it was logged."""
    out: dict[str, int] = {}
    for r in records:
        if r.get("msg") != RECONCILER_ERROR or r.get("namespace") != namespace or r.get("name") not in names:
            continue
        err = str(r.get("error") or "").strip() or "(no error logged)"
        out[err] = out.get(err, 0) + 1
    return out


LWS_RECONCILE = "Reconcile LeaderWorkerSet"  # Kueue's LWS reconciler, at verbosity 2 (leaderworkerset_reconciler.go)


def reconciles_after(records: list[Obj], namespace: str, name: str, after: float) -> int:
    """How many of Kueue's LWS_RECONCILE log records for LWS `namespace`/`name` were logged after
    `after` (seconds since the epoch; the record's RFC 3339 "ts")."""
    n = 0
    for r in records:
        if r.get("msg") != LWS_RECONCILE or r.get("namespace") != namespace or r.get("name") != name:
            continue
        try:
            ts = datetime.fromisoformat(str(r.get("ts"))).timestamp()
        except ValueError:
            continue
        n += ts > after
    return n


def describe_errors(errors: dict[str, int]) -> str:
    """Distinct logged errors with how often each was logged, in the order first logged."""
    return "; ".join(f"{err} ({n} time(s))" for err, n in errors.items())


def gpus(pod: Obj, resource: str) -> int:
    """The pod's requests of `resource`, summed over its containers."""
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        total += int(((c.get("resources") or {}).get("requests") or {}).get(resource, "0"))
    return total


def rack_capacity(
    nodes: list[Obj], pods: list[Obj], t: Topology, node_labels: dict[str, str], resource: str
) -> dict[str, int]:
    """rack -> the most `resource` free on one of its nodes that TAS counts for a flavor of
    `node_labels`: nodes with those labels and a rack label, Ready, not cordoned, without a
    NoSchedule or NoExecute taint (the suites' LWS pods tolerate none); free = allocatable minus
    the requests of every pod not finished that is bound to the node or pinned to it by Kueue's
    TAS ungater (nodeSelector on the hostname label)."""
    used: dict[str, int] = {}
    for pod in pods:
        if _finished(pod):
            continue
        spec = pod.get("spec") or {}
        node = spec.get("nodeName") or (spec.get("nodeSelector") or {}).get(t.hostname_label)
        if node:
            used[node] = used.get(node, 0) + gpus(pod, resource)
    out: dict[str, int] = {}
    for node in tas_nodes(nodes, t, node_labels):
        free = allocatable(node, resource) - used.get(node["metadata"]["name"], 0)
        rack = node["metadata"]["labels"][t.rack_label]
        out[rack] = max(free, out.get(rack, free))
    return out


def tas_nodes(nodes: list[Obj], t: Topology, node_labels: dict[str, str]) -> list[Obj]:
    """The nodes TAS counts for a flavor of `node_labels`: with those labels and a rack label,
    Ready, not cordoned, without a NoSchedule or NoExecute taint (the suites' LWS pods tolerate none)."""
    out = []
    for node in nodes:
        spec, labels = node.get("spec") or {}, node["metadata"].get("labels") or {}
        if any(labels.get(k) != v for k, v in node_labels.items()) or t.rack_label not in labels:
            continue
        tainted = any(x.get("effect") in UNSCHEDULABLE_TAINTS for x in spec.get("taints") or [])
        if not spec.get("unschedulable") and not tainted and P.condition(node, "Ready") == "True":
            out.append(node)
    return out


def allocatable(node: Obj, resource: str) -> int:
    return int(((node.get("status") or {}).get("allocatable") or {}).get(resource, "0"))


SHARED_NODES = (
    "InfraError: other namespaces' pods hold the GPUs this test's TAS group needs (the test shares "
    "the cluster's nodes with them, the harness's other tests among them; not an LWS/Kueue verdict)"
)
# How long after a pod's binding Kueue may still not count it (its pod informer's delivery; the
# harness's own watch delivers a write in at most 0.094 s, benchmarks/results/wait-latency-2026-12-01.md),
# at timeouts.scale 1: `bound_slack` adds the timestamps' one-second resolution and scales it.
KUEUE_SEES_BINDING = 1.0


def bound_slack() -> float:
    """Seconds before a Workload's quota reservation within which another pod's binding still races
    it (the one place KUEUE_SEES_BINDING is scaled)."""
    return SECOND + KUEUE_SEES_BINDING * scale()


def taken_by_others(
    mine: list[Obj],
    pods: list[Obj],
    nodes: list[Obj],
    t: Topology,
    resource: str,
    reserved: dict[str, float],
    slack: float,
) -> str | None:
    """The SHARED_NODES message when pods of `mine` wait unbound, pinned by Kueue's TAS ungater to a
    node (nodeSelector on the hostname label), where they would fit beside the pods of their own
    namespace bound there but not beside the other namespaces' pods bound there too; else None.

    Kueue counts a pod outside its TAS flavors only once it is bound, so a pod of another test the
    scheduler binds between TAS's assignment and the pinned pods' binding takes their room: the
    sharing of the cluster decided, not Kueue. Only another pod bound at most `slack` seconds before
    the pinned pod's Workload reserved quota (`reserved`: Workload name -> that time, the pod's
    GROUP_NAME naming its Workload) or after it counts: one bound earlier Kueue had every chance to
    count, so a node it fills stays Kueue's choice and the failure stands (as it does where the
    test's own pods leave no room). `pods` is every namespace's."""
    if not mine:
        return None
    own = mine[0]["metadata"].get("namespace")
    need: dict[str, int] = {}
    since: dict[str, float] = {}  # node -> the earliest reservation of a Workload waiting for it
    for pod in mine:
        spec = pod.get("spec") or {}
        node = (spec.get("nodeSelector") or {}).get(t.hostname_label)
        if node and not spec.get("nodeName") and (pod.get("status") or {}).get("phase") == "Pending":
            need[node] = need.get(node, 0) + gpus(pod, resource)
            at = reserved.get(P.kueue_pod_group(pod) or "", float("-inf"))  # no Workload read: no bound on the time
            since[node] = min(at, since.get(node, at))
    used: dict[str, int] = {}  # by this namespace's pods
    taken: dict[str, int] = {}  # by the other namespaces' pods that raced the reservation
    others: dict[str, list[str]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        held = gpus(pod, resource)
        if node not in need or not held or _finished(pod):
            continue
        meta = pod["metadata"]
        if meta.get("namespace") == own:
            used[node] = used.get(node, 0) + held
            continue
        bound = became_true(pod, "PodScheduled")  # when the scheduler bound it
        if bound is None or bound >= since[node] - slack:
            taken[node] = taken.get(node, 0) + held
            when = "" if bound is None else f" bound {bound - since[node]:+.0f} s from the reservation"
            others.setdefault(node, []).append(f"{meta.get('namespace')}/{meta['name']} {held}{when}")
        else:
            used[node] = used.get(node, 0) + held  # Kueue's to count: as good as the test's own
    alloc = {n["metadata"]["name"]: allocatable(n, resource) for n in nodes}
    found = []
    for node, wanted in sorted(need.items()):
        room = alloc.get(node, 0) - used.get(node, 0)
        if wanted and wanted <= room and wanted > room - taken.get(node, 0):
            found.append(
                f"node {node}: {alloc.get(node, 0)} {resource} allocatable, held before the reservation "
                f"{used.get(node, 0)}, waiting for it {wanted}, other namespaces' pods bound since "
                f"{', '.join(sorted(others[node]))}"
            )
    return f"{SHARED_NODES}: {'; '.join(found)}" if found else None


def became_true(obj: Obj, ctype: str) -> float | None:
    """When condition `ctype` of `obj` turned True (its lastTransitionTime, epoch seconds), or None
    while it is not True or carries no time."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype and c.get("status") == "True" and c.get("lastTransitionTime"):
            return parse_stamp(str(c["lastTransitionTime"])).timestamp()
    return None


def _finished(pod: Obj) -> bool:
    """The pod ran to its end (Succeeded or Failed): it holds nothing on its node any more."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


# Kueue's TAS reason when no domain holds a PodSet (tas_flavor_snapshot.go@v0.17.0 notFitMessage).
TAS_NO_FIT = re.compile(
    r'topology "[^"]+" (allows to fit only \d+ out of|doesn\'t allow to fit any of) \d+ (pod|slice)\(s\)'
)


def held_by_others(
    mine: list[Obj],
    held: list[Obj],
    pods: list[Obj],
    nodes: list[Obj],
    t: Topology,
    node_labels: dict[str, str],
    resource: str,
) -> str | None:
    """The SHARED_NODES message when a Workload of `held` waits without quota for a TAS reason
    (TAS_NO_FIT) while no rack of the flavor (`tas_nodes`) has its group's `resource` free, but
    one would without the other namespaces' pods bound in it; else None.

    The group's demand is the sum of its pods' requests (`mine`, GROUP_NAME naming the Workload),
    set against a rack's summed free room: the other tests' pods, which Kueue rightly counts, kept
    the group out, not Kueue. Where no rack would hold it even without them, the failure stands."""
    own = mine[0]["metadata"].get("namespace") if mine else None
    racks: dict[str, str] = {}  # node -> its rack
    room: dict[str, int] = {}  # rack -> free for this test alone
    taken: dict[str, int] = {}  # rack -> held by the other namespaces' pods
    others: dict[str, list[str]] = {}
    for n in tas_nodes(nodes, t, node_labels):
        rack = racks[n["metadata"]["name"]] = n["metadata"]["labels"][t.rack_label]
        room[rack] = room.get(rack, 0) + allocatable(n, resource)
    for pod in pods:
        spec, meta = pod.get("spec") or {}, pod["metadata"]
        node = spec.get("nodeName") or (spec.get("nodeSelector") or {}).get(t.hostname_label)
        held_here = gpus(pod, resource)
        if node not in racks or not held_here or _finished(pod):
            continue
        rack = racks[node]
        if meta.get("namespace") == own:  # bound, or pinned by its own flavor's TAS
            room[rack] -= held_here
        elif spec.get("nodeName"):  # another namespace's pod pinned but not bound holds nothing Kueue counts
            taken[rack] = taken.get(rack, 0) + held_here
            others.setdefault(rack, []).append(f"{meta.get('namespace')}/{meta['name']} {held_here} on {node}")
    found = []
    for wl in held:
        reason = next(
            (
                c.get("message") or ""
                for c in (wl.get("status") or {}).get("conditions") or []
                if c.get("type") == "QuotaReserved"
            ),
            "",
        )
        if not TAS_NO_FIT.search(reason):
            continue
        name = wl["metadata"]["name"]
        demand = sum(gpus(p, resource) for p in mine if P.kueue_pod_group(p) == name)
        alone = [r for r in sorted(room) if room[r] >= demand]
        if not demand or not alone or any(room[r] - taken.get(r, 0) >= demand for r in room):
            continue
        found.append(
            f"Workload {name} held ({reason}) for {demand} {resource} in one rack; free for it alone in "
            + ", ".join(
                f"rack {r} {room[r]}, of which other namespaces' pods hold {taken.get(r, 0)} "
                f"({', '.join(sorted(others.get(r, [])))})"
                for r in alone
            )
        )
    return f"{SHARED_NODES}: {'; '.join(found)}" if found else None


Capacity = Callable[[str | None], "dict[str, int] | None"]  # resourceVersion (None: now) -> rack_capacity


def one_pod_group_failure(
    idx: int, wl_name: str, wl: Obj | None, pods: list[Obj], worker_gpus: int, gpu: str, capacity: Capacity
) -> str | None:
    """The failure of group `idx` of leader-and-one-worker groups (the leader without GPUs, the
    worker with `worker_gpus`), or None when its Workload is Admitted and both its pods Ready.
    A Workload Kueue keeps Pending with ONE_POD_NO_FIT, counting room for one or more pods in the
    domain it settled on, while a rack had a node with the worker's GPUs free both as the cluster
    stood at the Workload's resourceVersion (when Kueue wrote that reason) and now, is named as
    such ("..., while rack(s) ... had a node ..."); every other state as it is."""
    if wl is None:
        return f"group {idx}'s Workload {wl_name} does not exist"
    conds = {c["type"]: c for c in (wl.get("status") or {}).get("conditions") or []}
    if (conds.get("Admitted") or {}).get("status") == "True":
        if len(pods) == 2 and all(P.pod_ready(p) and P.bound(p) and not P.gated(p) for p in pods):
            return None
        seen = [(p["metadata"]["name"], P.condition(p, "Ready")) for p in pods]
        return f"group {idx}'s Workload {wl_name} is Admitted but its pods are not all Ready: {seen}"
    quota = conds.get("QuotaReserved") or {}
    if quota.get("status") != "False":
        states = {k: c.get("status") for k, c in conds.items()}
        return f"group {idx}'s Workload {wl_name} neither Admitted nor held by Kueue: conditions {states}"
    reason = str(quota.get("message", ""))
    held = f"group {idx}'s Workload {wl_name} stays Pending: {reason}"
    fit = ONE_POD_NO_FIT.fullmatch(reason)
    if not fit or int(fit["fit"]) < 1:
        return held
    rv = str(wl["metadata"].get("resourceVersion") or "")
    then = capacity(rv) if rv else None
    now = capacity(None)
    fits = sorted(r for r, n in (then or {}).items() if n >= worker_gpus and (now or {}).get(r, 0) >= worker_gpus)
    if fits:
        return (
            f"{held}, while rack(s) {', '.join(fits)} had a node with {worker_gpus} or more {gpu} free for its one "
            f"worker when Kueue wrote that reason (resourceVersion {rv}) and still have"
        )
    return (
        f"{held}; no rack had a node with {worker_gpus} or more {gpu} free for its one worker both when Kueue wrote "
        f"that reason (resourceVersion {rv}: {'not readable' if then is None else then}) and now ({now})"
    )


GROUP_NAME = P.POD_GROUP_NAME  # Kueue's pod-group label (and annotation) key
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
LABEL_VALUE_MAX = 63


def pod_group_names_wrong(groups: dict[int, list[Obj]], want: dict[int, str]) -> list[str]:
    """Kueue names each pod's group by its Workload: every pod of group i must carry `want[i]` as
    its GROUP_NAME label (or, where Kueue carries its identifiers as annotations, annotation), a
    valid label value. One line per pod that does not, and per group without pods."""
    out = [f"group {i} has no pods" for i in want if not groups.get(i)]
    for i, pods in sorted(groups.items()):
        for p in pods:
            meta = p["metadata"]
            value = (meta.get("labels") or {}).get(GROUP_NAME) or (meta.get("annotations") or {}).get(GROUP_NAME)
            if i not in want:
                out.append(f"pod {meta['name']} is in group {i}, which has no Workload")
            elif value != want[i]:
                out.append(f"pod {meta['name']} carries {GROUP_NAME} {value!r}, not its Workload's name {want[i]!r}")
            elif len(value) > LABEL_VALUE_MAX or not LABEL_VALUE.fullmatch(value):
                out.append(f"pod {meta['name']}: {GROUP_NAME} {value!r} is no valid label value")
    return out
