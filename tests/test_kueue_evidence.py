"""The evidence a known Kueue bug is reported with (lws_conformance.k8s.kueue_evidence) and the
clause checks of the Kueue and TPU suites, on doctored objects and log records: each must refuse
the pictures a timeout, a loaded machine or a wrong answer would give."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lws_conformance import workloads
from lws_conformance.k8s import admission
from lws_conformance.k8s import kueue_evidence as E
from lws_conformance.k8s import predicates as P
from lws_conformance.k8s.logs import json_log_records
from lws_conformance.profile import Topology

Obj = dict[str, Any]
T = Topology(
    blocks=1,
    racks_per_block=2,
    nodes_per_rack=1,
    gpus_per_node=8,
    cpu_per_node="32",
    memory_per_node="256Gi",
    pods_per_node=110,
    gpu_resource="nvidia.com/gpu",
    block_label="b",
    rack_label="rack",
    hostname_label="kubernetes.io/hostname",
)
GPU = T.gpu_resource
FLAVOR = {"pool": "lwsc"}
REFUSED = (
    'Workload.kueue.x-k8s.io "leaderworkerset-lf-0-11254" is invalid: '
    "status.admission.podSetAssignments[0].topologyAssignment.slices: Required value"
)


# -- Kueue's log ------------------------------------------------------------------------------
def _record(name: str, ns: str = "ns", error: str = REFUSED, msg: str = E.COULD_NOT_ADMIT) -> Obj:
    return {"level": "error", "msg": msg, "workload": {"name": name, "namespace": ns}, "error": error}


def test_json_log_records_reads_only_the_message_s_json_records(tmp_path: Path) -> None:
    log = tmp_path / "kueue.log"
    lines = [
        json.dumps(_record("a")),
        f"not json but says {E.COULD_NOT_ADMIT}",
        json.dumps({"msg": "Workload update", "note": E.COULD_NOT_ADMIT}),
        json.dumps(_record("b")),
    ]
    log.write_text("\n".join(lines) + "\n")
    got = json_log_records(log, E.COULD_NOT_ADMIT)
    assert got is not None and [r["workload"]["name"] for r in got] == ["a", "b"]
    assert json_log_records(tmp_path / "missing.log", E.COULD_NOT_ADMIT) is None
    assert json_log_records(None, E.COULD_NOT_ADMIT) is None


def test_admission_refusals_are_the_workload_s_own() -> None:
    conflict = 'Operation cannot be fulfilled on workloads.kueue.x-k8s.io "x": the object has been modified'
    records = [
        _record("wl"),
        _record("wl"),
        _record("wl", error=conflict),
        _record("wl", ns="other"),
        _record("other"),
        _record("wl", msg="Workload admitted"),
    ]
    assert E.admission_refusals(records, "ns", "wl") == {REFUSED: 2, conflict: 1}
    assert E.admission_refusals(records, "ns", "none") == {}


# -- free capacity as TAS counts it ------------------------------------------------------------
def _node(name: str, rack: str, gpus: int = 8, **spec: Any) -> Obj:
    ready = spec.pop("ready", True)
    labels = {**FLAVOR, T.rack_label: rack}
    if spec.pop("outside_flavor", False):
        labels.pop("pool")
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "allocatable": {GPU: str(gpus)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def _pod(name: str, gpus: int, node: str = "", pinned: str = "", phase: str = "Running", ns: str = "ns") -> Obj:
    spec: Obj = {"containers": [{"name": "c", "resources": {"requests": {GPU: str(gpus)}}}]}
    if node:
        spec["nodeName"] = node
    if pinned:
        spec["nodeSelector"] = {T.hostname_label: pinned}
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec, "status": {"phase": phase}}


def test_rack_capacity_counts_only_the_nodes_tas_counts() -> None:
    nodes = [
        _node("n1", "r1"),
        _node("n2", "r2", taints=[{"key": "k", "effect": "NoSchedule"}]),
        _node("n3", "r3", unschedulable=True),
        _node("n4", "r4", ready=False),
        _node("n5", "r5", outside_flavor=True),
        _node("n6", "r6", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
    ]
    assert E.rack_capacity(nodes, [], T, FLAVOR, GPU) == {"r1": 8, "r6": 8}


def test_rack_capacity_subtracts_bound_and_pinned_pods_not_finished() -> None:
    nodes = [_node("n1", "r1"), _node("n2", "r1", gpus=4)]
    pods = [
        _pod("bound", 3, node="n1"),
        _pod("pinned", 2, pinned="n1"),  # ungated by TAS, not yet bound
        _pod("done", 8, node="n1", phase="Succeeded"),
        _pod("n2", 4, node="n2"),
    ]
    assert E.rack_capacity(nodes, pods, T, FLAVOR, GPU) == {"r1": 3}


# -- TAS's assigned GPUs taken by another namespace's pods -------------------------------------
RESERVED = {"wl-0": 1_000_000.0}  # group wl-0's Workload reserved quota at 1970-01-12T13:46:40Z


def _waiting(name: str, gpus: int, node: str, group: str = "wl-0") -> Obj:
    pod = _pod(name, gpus, pinned=node, phase="Pending")
    pod["metadata"]["labels"] = {E.GROUP_NAME: group}
    return pod


def _other(name: str, gpus: int, node: str = "n1", bound: str | None = "13:46:40", **kw: Any) -> Obj:
    """A pod of another namespace bound at `bound` on 1970-01-12 (None: no PodScheduled condition)."""
    pod = _pod(name, gpus, node=node, ns="other", **kw)
    if bound is not None:
        stamp = f"1970-01-12T{bound}Z"
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}]
    return pod


def _taken(mine: list[Obj], others: list[Obj], slack: float = 2.0) -> str | None:
    nodes = [_node("n1", "r1"), _node("n2", "r2")]
    return E.taken_by_others(mine, mine + others, nodes, T, GPU, RESERVED, slack)


def test_a_pinned_pod_that_fits_beside_its_own_but_not_beside_another_namespace_s_is_interference() -> None:
    mine = [_pod("w0", 4, node="n1"), _waiting("w1", 3, "n1")]
    found = _taken(mine, [_other("x", 2), _other("y", 1, node="n2")])
    assert found is not None and found.startswith(E.SHARED_NODES), found
    assert "node n1: 8 nvidia.com/gpu allocatable, held before the reservation 4, waiting for it 3" in found
    assert "other/x 2 bound +0 s from the reservation" in found and "other/y" not in found and "n2" not in found
    assert _taken(mine, [_other("x", 2, bound=None)]) is not None  # binding time unknown: cannot tell


def test_a_pod_bound_before_the_reservation_was_kueue_s_to_count() -> None:
    """1_000_000 s is 13:46:40; a pod bound at 13:46:37 (3 s before) Kueue could see: its room was
    never free, and the failure stands; one bound at 13:46:38 (within the 2 s slack) raced it."""
    mine = [_pod("w0", 4, node="n1"), _waiting("w1", 3, "n1")]
    assert _taken(mine, [_other("x", 2, bound="13:46:37")]) is None
    assert _taken(mine, [_other("x", 2, bound="13:46:38")]) is not None
    unmatched = [_pod("w0", 4, node="n1"), _waiting("w1", 3, "n1", group="another")]  # no reservation read
    assert _taken(unmatched, [_other("x", 2, bound="13:40:00")]) is not None


def test_no_interference_when_the_own_pods_overfill_the_node_or_room_is_left() -> None:
    overfilled = [_pod("w0", 6, node="n1"), _waiting("w1", 3, "n1")]  # Kueue's own overcommit
    assert _taken(overfilled, [_other("x", 2)]) is None
    roomy = [_waiting("w1", 3, "n1")]  # 8 - 2 still holds 3: held for another reason
    assert _taken(roomy, [_other("x", 2)]) is None
    assert _taken(roomy, [_other("x", 6, phase="Succeeded")]) is None  # finished: no room taken
    pinned_elsewhere = _pod("x", 6, pinned="n1", phase="Pending", ns="other")  # not bound: no room taken
    assert _taken(roomy, [pinned_elsewhere]) is None


def test_only_unbound_pinned_pending_pods_are_waiting_for_their_node() -> None:
    others = [_other("x", 8)]
    assert _taken([_pod("w1", 3, node="n1", phase="Pending")], others) is None  # bound already
    assert _taken([_pod("w1", 3, phase="Pending")], others) is None  # not pinned by TAS
    assert _taken([_waiting("w1", 0, "n1")], others) is None  # no GPU asked
    assert _taken([], others) is None
    assert _taken([_waiting("w1", 3, "n1")], others) is not None


NO_ROOM = 'couldn\'t assign flavors to pod set worker: topology "t-topo" allows to fit only 5 out of 8 pod(s)'


def _held(reason: str = NO_ROOM) -> Obj:
    return {
        "metadata": {"name": "wl-0"},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "message": reason}]},
    }


def _gated_group(gpus: int = 1, size: int = 8) -> list[Obj]:
    group = [_pod(f"w{i}", gpus, phase="Pending") for i in range(size)]
    for pod in group:
        pod["metadata"]["labels"] = {E.GROUP_NAME: "wl-0"}
    return group


def _held_by(mine: list[Obj], others: list[Obj], reason: str = NO_ROOM) -> str | None:
    nodes = [_node("n1", "r1"), _node("n2", "r2")]
    return E.held_by_others(mine, [_held(reason)], mine + others, nodes, T, FLAVOR, GPU)


def test_a_group_no_rack_holds_only_beside_other_namespaces_pods_is_interference() -> None:
    found = _held_by(_gated_group(), [_other("x", 3), _other("y", 1, node="n2")])
    assert found is not None and found.startswith(E.SHARED_NODES), found
    assert "Workload wl-0 held (" in found and "for 8 nvidia.com/gpu in one rack" in found
    assert "rack r1 8, of which other namespaces' pods hold 3 (other/x 3 on n1)" in found
    assert "rack r2 8, of which other namespaces' pods hold 1 (other/y 1 on n2)" in found


def test_a_group_a_rack_holds_or_none_would_hold_alone_stays_kueue_s() -> None:
    assert _held_by(_gated_group(), [_other("x", 3)]) is None  # rack r2 free: Kueue had room
    own = _gated_group() + [_pod("mine", 1, node="n1"), _pod("mine2", 1, pinned="n2", phase="Pending")]
    assert _held_by(own, [_other("x", 3), _other("y", 1, node="n2")]) is None  # its own test leaves no rack whole
    assert _held_by(_gated_group(size=9), [_other("x", 3), _other("y", 1, node="n2")]) is None  # no rack ever holds 9
    unbound = _pod("y", 1, pinned="n2", phase="Pending", ns="other")  # another flavor's, not bound: Kueue counts none
    assert _held_by(_gated_group(), [_other("x", 3), unbound]) is None
    assert _held_by(_gated_group(), [_other("x", 3), _other("y", 1, node="n2")], reason="quota") is None
    assert _held_by(_gated_group(gpus=0), [_other("x", 3), _other("y", 1, node="n2")]) is None


def test_tas_no_fit_reads_both_of_kueue_s_reasons() -> None:
    assert E.TAS_NO_FIT.search(NO_ROOM)
    assert E.TAS_NO_FIT.search('topology "t-topo" doesn\'t allow to fit any of 2 slice(s)')
    assert not E.TAS_NO_FIT.search("insufficient quota for nvidia.com/gpu in flavor f")


# -- a leader-and-one-worker group's state -----------------------------------------------------
NO_FIT = 'couldn\'t assign flavors to pod set leader: topology "t-topo" allows to fit only {n} out of 1 pod(s)'


def _wl(reason: str | None = None, admitted: bool = False, rv: str = "100") -> Obj:
    conds = []
    if admitted:
        conds = [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]
    elif reason is not None:
        conds = [{"type": "QuotaReserved", "status": "False", "message": reason}]
    return {"metadata": {"name": "wl", "resourceVersion": rv}, "status": {"conditions": conds}}


def _ready(name: str, ready: bool = True) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def _capacity(then: dict[str, int] | None, now: dict[str, int] | None) -> E.Capacity:
    def read(rv: str | None) -> dict[str, int] | None:
        return then if rv else now

    return read


def _failure(wl: Obj | None, then: dict[str, int] | None, now: dict[str, int] | None, pods: Any = ()) -> str | None:
    return E.one_pod_group_failure(1, "wl", wl, list(pods), 5, GPU, _capacity(then, now))


def test_a_group_held_while_a_rack_had_room_then_and_now_is_named_as_such() -> None:
    got = _failure(_wl(NO_FIT.format(n=108)), {"r1": 8, "r2": 2}, {"r1": 6, "r2": 8})
    assert got == (
        "group 1's Workload wl stays Pending: " + NO_FIT.format(n=108) + ", while rack(s) r1 had a node with 5 or "
        "more nvidia.com/gpu free for its one worker when Kueue wrote that reason (resourceVersion 100) and still have"
    )


def test_a_rack_free_only_after_the_wait_or_unreadable_then_is_no_evidence() -> None:
    for then, now in (({"r1": 2}, {"r1": 8}), (None, {"r1": 8}), ({"r1": 8}, {"r1": 2})):
        got = _failure(_wl(NO_FIT.format(n=108)), then, now)
        assert got is not None and ", while rack(s)" not in got and "; no rack had a node" in got, (then, now)


def test_kueue_counting_no_room_or_another_reason_is_no_evidence() -> None:
    for reason in (NO_FIT.format(n=0), "couldn't assign flavors to pod set leader: insufficient quota"):
        assert _failure(_wl(reason), {"r1": 8}, {"r1": 8}) == f"group 1's Workload wl stays Pending: {reason}"


def test_every_other_group_state_is_named_as_it_is() -> None:
    assert _failure(_wl(admitted=True), {}, {}, [_ready("co-1"), _ready("co-1-1")]) is None
    not_ready = _failure(_wl(admitted=True), {}, {}, [_ready("co-1"), _ready("co-1-1", ready=False)])
    assert not_ready == (
        "group 1's Workload wl is Admitted but its pods are not all Ready: [('co-1', 'True'), ('co-1-1', 'False')]"
    )
    assert _failure(None, {}, {}) == "group 1's Workload wl does not exist"
    assert _failure(_wl(), {}, {}) == "group 1's Workload wl neither Admitted nor held by Kueue: conditions {}"


# -- Workload names and pod-group names with ShortWorkloadNames -------------------------------
LONG = "long-" + "n" * 45


def test_short_workload_names_keep_the_first_57_characters_and_the_whole_name_s_hash() -> None:
    for idx in (0, 1):
        long_name = workloads.lws_workload_name(LONG, "uid", idx)
        short = workloads.lws_workload_name(LONG, "uid", idx, workloads.SHORT_WORKLOAD_NAME_MAX)
        assert len(long_name) == 74 and len(short) == 63
        assert short == f"leaderworkerset-{LONG}-{idx}"[:57] + "-" + long_name[-5:]
    assert workloads.lws_workload_name("co", "uid", 0, workloads.SHORT_WORKLOAD_NAME_MAX) == (
        workloads.lws_workload_name("co", "uid", 0)
    )


def test_short_workload_names_refuse_any_other_cut_and_a_missing_group() -> None:
    want = [workloads.lws_workload_name(LONG, "uid", i, workloads.SHORT_WORKLOAD_NAME_MAX) for i in (0, 1)]
    assert workloads.short_workload_names_wrong(want, LONG, "uid", 2) == []
    hashes = [n[-5:] for n in want]
    cut_short = [f"leaderworkerset-{LONG}"[:40] + "-" + h for h in hashes]  # a prefix, but not the rule's
    assert workloads.short_workload_names_wrong(cut_short, LONG, "uid", 2)
    other_hash = [want[0], want[1][:-5] + "00000"]
    assert workloads.short_workload_names_wrong(other_hash, LONG, "uid", 2)
    assert workloads.short_workload_names_wrong(want[:1], LONG, "uid", 2) == [f"group 1: no Workload {want[1]}"]
    too_long = [workloads.lws_workload_name(LONG, "uid", i) for i in (0, 1)]
    assert any("74 characters" in w for w in workloads.short_workload_names_wrong(too_long, LONG, "uid", 2))


def _member(name: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Obj:
    return {"metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}}}


def test_every_pod_carries_its_group_s_workload_name() -> None:
    want = {0: "wl-a", 1: "wl-b"}
    good = {0: [_member("p0", {E.GROUP_NAME: "wl-a"})], 1: [_member("p1", annotations={E.GROUP_NAME: "wl-b"})]}
    assert E.pod_group_names_wrong(good, want) == []
    swapped = {0: [_member("p0", {E.GROUP_NAME: "wl-b"})], 1: good[1]}
    assert E.pod_group_names_wrong(swapped, want) == [
        f"pod p0 carries {E.GROUP_NAME} 'wl-b', not its Workload's name 'wl-a'"
    ]
    unnamed = {0: [_member("p0")], 1: good[1]}
    assert E.pod_group_names_wrong(unnamed, want) == [
        f"pod p0 carries {E.GROUP_NAME} None, not its Workload's name 'wl-a'"
    ]
    assert E.pod_group_names_wrong({0: good[0]}, want) == ["group 1 has no pods"]
    bad = "x" * 64
    assert E.pod_group_names_wrong({0: [_member("p0", annotations={E.GROUP_NAME: bad})]}, {0: bad}) == [
        f"pod p0: {E.GROUP_NAME} '{bad}' is no valid label value"
    ]


# -- an LWS stored despite its refusal; TPU host names ------------------------------------------
def test_an_lws_stored_despite_its_refusal_is_a_failure() -> None:
    listed = [{"metadata": {"name": "other", "uid": "u1"}}, {"metadata": {"name": "pgn", "uid": "u2"}}]
    assert admission.stored_despite_refusal("LeaderWorkerSet", "pgn", listed) == (
        "LeaderWorkerSet pgn is stored (uid u2) although its creation was refused"
    )
    assert admission.stored_despite_refusal("LeaderWorkerSet", "top", listed) is None


def test_tpu_hosts_are_compared_whole() -> None:
    want = (P.tpu_hosts(["ptpu-0", "ptpu-0-1"], "ptpu"), 1, "ptpu-0")
    seen = {"TPU_WORKER_HOSTNAMES": "ptpu-0.ptpu,ptpu-0-1.ptpu", "TPU_WORKER_ID": "1", "TPU_NAME": "ptpu-0"}
    assert P.tpu_slice_seen(seen) == want
    for hosts in ("ptpu-0.other,ptpu-0-1.other", "ptpu-0,ptpu-0-1", "ptpu-0.ptpu.ns.svc,ptpu-0-1.ptpu.ns.svc"):
        assert P.tpu_slice_seen({**seen, "TPU_WORKER_HOSTNAMES": hosts}) != want, hosts


# -- Kueue's reconcilers --------------------------------------------------------------------------
def test_reconciler_errors_are_the_named_objects_own() -> None:
    too_long = 'Pod "p-0" is invalid: metadata.labels: Invalid value: "x": must be no more than 63 characters'
    records = [
        {"msg": E.RECONCILER_ERROR, "namespace": "ns", "name": "p-0", "error": too_long},
        {"msg": E.RECONCILER_ERROR, "namespace": "ns", "name": "p-0", "error": too_long},
        {"msg": E.RECONCILER_ERROR, "namespace": "ns", "name": "other", "error": "boom"},
        {"msg": E.RECONCILER_ERROR, "namespace": "ns2", "name": "p-0", "error": "boom"},
        {"msg": "Reconcile LeaderWorkerSet Pod", "namespace": "ns", "name": "p-0"},
    ]
    assert E.reconciler_errors(records, "ns", {"p-0", "p-0-1"}) == {too_long: 2}
    assert E.describe_errors({too_long: 2, "boom": 1}) == f"{too_long} (2 time(s)); boom (1 time(s))"


def test_reconciles_after_counts_only_the_lws_s_later_reconciles() -> None:
    def rec(ts: str, name: str = "ps", msg: str = E.LWS_RECONCILE) -> Obj:
        return {"msg": msg, "ts": ts, "namespace": "ns", "name": name}

    after = 1_800_000_000.5  # 2027-01-15T08:00:00.5Z
    records = [
        rec("2027-01-15T08:00:00.4Z"),
        rec("2027-01-15T08:00:00.600000001Z"),
        rec("2027-01-15T08:00:01Z"),
        rec("2027-01-15T08:00:02Z", name="other"),
        rec("2027-01-15T08:00:02Z", msg="Reconcile LeaderWorkerSet Pod"),
        rec("not a time"),
    ]
    assert E.reconciles_after(records, "ns", "ps", after) == 2
