"""Pure checks over plain-dict objects, shared by waits, suites and the harness's own tests (the
checks over a recording's watch history are `lws_conformance.observe.history`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..catalogue import parse_version

Obj = dict[str, Any]
ADMISSION_GATE = "kueue.x-k8s.io/admission"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
REVISION_LABEL = "leaderworkerset.sigs.k8s.io/template-revision-hash"
OBSERVED_GENERATION_SINCE = (0, 9, 0)  # LWS status.observedGeneration
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def condition(obj: Obj, ctype: str) -> str | None:
    """The status ("True"/"False"/"Unknown") of condition `ctype`, or None if absent."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            status: str = c.get("status")
            return status
    return None


def pod_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and condition(pod, "Ready") == "True"


def gated(pod: Obj, gate: str = ADMISSION_GATE) -> bool:
    return any(g.get("name") == gate for g in (pod.get("spec") or {}).get("schedulingGates") or [])


def live(pods: list[Obj]) -> list[Obj]:
    """Pods not being deleted."""
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def by_group(pods: list[Obj]) -> dict[str, list[Obj]]:
    groups: dict[str, list[Obj]] = {}
    for p in live(pods):
        idx = (p["metadata"].get("labels") or {}).get(GROUP_INDEX)
        if idx is not None:
            groups.setdefault(idx, []).append(p)
    return groups


def names(pods: list[Obj]) -> set[str]:
    return {p["metadata"]["name"] for p in live(pods)}


def expected_pod_names(lws_name: str, replicas: int, size: int) -> set[str]:
    """Leader pods `L-i`, worker pods `L-i-j` with j from 1 (LWS pod_controller.go
    constructWorkerStatefulSetApplyConfiguration@v0.9.0: worker ordinals start at 1)."""
    out = set()
    for i in range(replicas):
        out.add(f"{lws_name}-{i}")
        out.update(f"{lws_name}-{i}-{j}" for j in range(1, size))
    return out


def ready_exactly(expected: set[str], uids: Mapping[str, str] | None = None) -> Callable[[list[Obj]], list[Obj] | None]:
    """A wait predicate: the pods named `expected` exist, no other pod (a terminating one counts),
    and each live one is Ready (and, with `uids`, still the pod of that UID); the live pods."""

    def check(pods: list[Obj]) -> list[Obj] | None:
        mine = live(pods)
        same = uids is None or all(p["metadata"]["uid"] == uids.get(p["metadata"]["name"]) for p in mine)
        return mine if same and names(pods) == expected and all(pod_ready(p) for p in mine) else None

    return check


# -- Kueue pod-group helpers (suites/kueue) --------------------------------------------------
POD_GROUP_NAME = "kueue.x-k8s.io/pod-group-name"


def kueue_pod_group(pod: Obj) -> str | None:
    """The Kueue pod-group (Workload) name of a pod: a label in Kueue 0.17, an annotation in 0.18+."""
    meta = pod.get("metadata") or {}
    name: str | None = (meta.get("labels") or {}).get(POD_GROUP_NAME) or (meta.get("annotations") or {}).get(
        POD_GROUP_NAME
    )
    return name


def bound(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def held(pod: Obj) -> bool:
    """Still held back by Kueue: admission-gated, not bound to a node, not running."""
    return gated(pod) and not bound(pod) and (pod.get("status") or {}).get("phase") != "Running"


def lws_has_observed_generation(versions: Mapping[str, str] | None) -> bool:
    """Does the installed LWS write status.observedGeneration (since v0.9.0)? An unknown version
    (no `versions`, or no "lws" entry) is taken as the current API, which has the field."""
    have = (versions or {}).get("lws")
    return have is None or parse_version(have) >= OBSERVED_GENERATION_SINCE


def lws_settled(replicas: int, updated: int | None = None, *, versions: Mapping[str, str] | None = None) -> Any:
    """An LWS check: Available, status written for the current generation, replicas and
    readyReplicas equal to `replicas`, updatedReplicas equal to `updated` (default `replicas`).

    status.observedGeneration exists since LWS v0.9.0: with `versions` (the cluster handle's)
    naming an older LWS a missing field is accepted (there is nothing to compare), a present one
    must still equal metadata.generation; otherwise (v0.9.0+, or versions unknown) the field is
    required and must equal metadata.generation."""
    required = lws_has_observed_generation(versions)

    def check(lws: Obj) -> bool:
        st = lws.get("status") or {}
        generation = lws["metadata"]["generation"]
        observed = st.get("observedGeneration")
        current = observed == generation if (required or observed is not None) else True
        return (
            condition(lws, "Available") == "True"
            and current
            and st.get("replicas", 0) == replicas
            and st.get("readyReplicas", 0) == replicas
            and st.get("updatedReplicas", 0) == (replicas if updated is None else updated)
        )

    return check


def domains(pods: list[Obj], nodes: Mapping[str, Mapping[str, str]], key: str, by: str) -> dict[str, set[str]]:
    """Pod label `by` value -> the values of node label `key` on the nodes its pods run on
    (`nodes`: node name -> labels)."""
    out: dict[str, set[str]] = {}
    for p in pods:
        node = p["spec"]["nodeName"]
        by_value = str((p["metadata"].get("labels") or {}).get(by))
        out.setdefault(by_value, set()).add(nodes[node].get(key, f"<{node} has no {key}>"))
    return out


def one_domain_each[K: (str, int)](placed: Mapping[K, set[str]]) -> tuple[dict[K, list[str]], dict[str, list[K]]]:
    """Exclusive placement of `placed` (key -> the domains its pods run on, as `domains` returns):
    (keys spread over several domains -> those domains, domains holding several keys -> those
    keys, in key order). Both empty: every key in one domain of its own."""
    split = {k: sorted(d) for k, d in placed.items() if len(d) != 1}
    owners: dict[str, list[K]] = {}
    for k in sorted(placed):
        if len(placed[k]) == 1:
            owners.setdefault(next(iter(placed[k])), []).append(k)
    return split, {d: ks for d, ks in owners.items() if len(ks) > 1}


def _rank_runs(placed: Mapping[int, str]) -> list[str]:
    """The nodes of `placed` (pod index -> node) in index order, one entry per run of equal nodes."""
    runs: list[str] = []
    for node in (placed[i] for i in sorted(placed)):
        if not runs or runs[-1] != node:
            runs.append(node)
    return runs


def rank_ranges_broken(placed: Mapping[int, str]) -> list[str]:
    """TAS rank packing (KUEUE-TAS-005): pods sorted by their index must fill nodes one after the
    other, each node's pods a contiguous index range. `placed`: pod index -> node. Returns what
    breaks it (empty: packed)."""
    runs = _rank_runs(placed)
    split = sorted({n for n in runs if runs.count(n) > 1})
    if not split:
        return []
    return [f"node(s) {split} hold non-contiguous indexes: {dict(sorted(placed.items()))}"]


def rank_nodes_unordered(placed: Mapping[int, str]) -> list[str]:
    """TAS rank order across nodes (KUEUE-TAS-009): the nodes, taken in index order, must come in
    ascending name order (Kueue orders equally free domains by their level values and hands out
    ranks in the assignment's order). Returns what breaks it (empty: ordered)."""
    runs = _rank_runs(placed)
    if runs == sorted(runs):
        return []
    return [f"nodes in index order {runs} are not in ascending name order"]


def tpu_hosts(pods: list[str], subdomain: str) -> list[str]:
    """The host names LWS writes in TPU_WORKER_HOSTNAMES for the slice `pods`, in order:
    <pod>.<subdomain>, the pods' headless Service (pkg/utils/accelerators/tpu.go@v0.9.0)."""
    return [f"{p}.{subdomain}" for p in pods]


def tpu_slice_seen(env: dict[str, str]) -> tuple[list[str], int, str]:
    """(slice hosts, TPU_WORKER_ID, TPU_NAME) of a process's TPU variables, each host name whole
    (as a resolver gets it), in the order written."""
    return env["TPU_WORKER_HOSTNAMES"].split(","), int(env["TPU_WORKER_ID"]), env["TPU_NAME"]
