"""What an LWS group receives from the ResourceFlavor Kueue assigns it, and how Kueue chooses among
several flavors (Kueue's ResourceFlavor and ClusterQueue concept pages and API comments at v0.17.0;
pkg/podset, pkg/scheduler/flavorassigner).

Why this matters: flavors are how a cluster with several kinds of accelerator node tells Kueue
which nodes a group's quota stands for. A group admitted in one flavor whose pods run on another
flavor's nodes (no nodeSelector injected), that lacks the flavor's tolerations, that is given a
tainted flavor it does not tolerate, or that is put in the wrong flavor (order, borrowing,
preemption) consumes accelerators its quota does not cover, or evicts work it did not need to.

Every scenario leaves room for the wrong outcome: each flavor is one block of GPU nodes, and the
other block has free GPUs; the flavor a wrong choice would take has quota for the group.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, ClusterHandle, Failures, Scenario, workloads
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K
from . import resource_helpers as R

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
SIZE = 2  # leader + 1 worker, 1 GPU each


def _preempted(name: str) -> Any:
    return lambda ws: [w for w in ws if w["metadata"]["name"] == name and R.was_preempted(w)]


def _raise(failures: list[str]) -> None:
    if failures:
        raise Failures(failures)


@pytest.mark.requirement("KUEUE-FLAVOR-001")
@pytest.mark.requirement("KUEUE-FLAVOR-002")
@pytest.mark.requirement("KUEUE-FLAVOR-003")
def test_group_gets_its_flavors_node_labels_and_tolerations(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """Two flavors, one block of GPU nodes each, each with quota for one group and a toleration of
    its own. Group 0 must get the first flavor (it has room); scaled to 2, group 1 must get the
    second (the first is full). Each group's pods carry their flavor's nodeLabels as nodeSelector,
    run on its block (the other block has free GPUs) and carry its tolerations."""
    t = lwsc_cluster.topology
    b1, b2 = R.two_blocks(scenario, lwsc_cluster)
    flavors = {
        name: scenario.create(
            R.flavor(name, {t.block_label: block}, tolerations=[R.toleration(f"{R.TAINT_PREFIX}{name}")])
        )
        for name, block in ((f"{unique}-a", b1), (f"{unique}-b", b2))
    }
    first, second = flavors
    R.queue(
        scenario,
        R.cluster_queue(f"{unique}-cq", [R.flavor_quota(f, R.quota(lwsc_cluster, SIZE)) for f in flavors]),
        K.QUEUE,
    )
    scenario.create(R.lws("fl", lwsc_cluster, SIZE, K.QUEUE))
    scenario.wait_pods(K.all_ready(1, SIZE), "group 0 whole and Ready", selector=K.selector("fl"))
    scenario.patch_lws("fl", {"spec": {"replicas": 2}})
    scenario.wait_pods(K.all_ready(2, SIZE), "both groups whole and Ready", selector=K.selector("fl"))

    for index, want in ((0, first), (1, second)):
        wl = R.group_workload(scenario, "fl", index)
        got = R.flavors_of(wl)
        with claim("KUEUE-FLAVOR-003"):
            wrong = R.assigned_whole(wl, want)
            assert wrong is None, (
                f"group {index}: {wrong} (flavors in order {list(flavors)}, quota for one group each; "
                f"group 0 admitted first, group 1 after it)"
            )
        assigned = {f for names in got.values() for f in names}
        assert assigned and assigned <= set(flavors), f"group {index}: {wl['metadata']['name']} assigned {got}"
        for pod in R.group_pods(scenario, "fl", index):  # each pod against its own podSet's flavor
            podset = "leader" if pod["metadata"]["labels"].get(P.WORKER_INDEX) == "0" else "worker"
            for name in got.get(podset, []):
                with claim("KUEUE-FLAVOR-001"):
                    _raise(R.node_label_failures(scenario, [pod], name, flavors[name]["spec"]["nodeLabels"]))
                with claim("KUEUE-FLAVOR-002"):
                    tol = flavors[name]["spec"]["tolerations"][0]
                    assert R.has_toleration(pod, tol), (
                        f"group {index}: pod {pod['metadata']['name']} ({podset}, flavor {name}) lacks the flavor's "
                        f"toleration {tol}: it has {pod['spec'].get('tolerations')}"
                    )


@pytest.mark.requirement("KUEUE-FLAVOR-004")
def test_flavor_taints_admit_only_groups_that_tolerate_them(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """The first flavor is tainted (nodeTaints, NoSchedule) and has room for both groups; the
    second is not. A group tolerating the taint is admitted in the tainted flavor; a group that
    does not is admitted in the second, and gets no toleration from Kueue; a group that does not
    tolerate it, queued where the tainted flavor is the only one, stays wholly held."""
    t = lwsc_cluster.topology
    b1, b2 = R.two_blocks(scenario, lwsc_cluster)
    key = f"{R.TAINT_PREFIX}{unique}"
    taint = {"key": key, "value": "reserved", "effect": "NoSchedule"}
    tainted = scenario.create(R.flavor(f"{unique}-t", {t.block_label: b1}, taints=[taint]))
    plain = scenario.create(R.flavor(f"{unique}-o", {t.block_label: b2}))
    room = R.quota(lwsc_cluster, 2 * SIZE)
    names = [tainted["metadata"]["name"], plain["metadata"]["name"]]
    R.queue(scenario, R.cluster_queue(f"{unique}-cq", [R.flavor_quota(n, room) for n in names]), K.QUEUE)
    only = R.queue(scenario, R.cluster_queue(f"{unique}-only", [R.flavor_quota(names[0], room)]), "lq-tainted")

    scenario.create(R.lws("tolerant", lwsc_cluster, SIZE, K.QUEUE, tolerations=[R.toleration(key, "reserved")]))
    scenario.create(R.lws("plain", lwsc_cluster, SIZE, K.QUEUE))
    scenario.create(R.lws("held", lwsc_cluster, SIZE, only))
    scenario.wait_pods(K.all_ready(1, SIZE), "the tolerating group whole and Ready", selector=K.selector("tolerant"))
    scenario.wait_pods(K.all_ready(1, SIZE), "the other group whole and Ready", selector=K.selector("plain"))
    scenario.wait_pods(
        K.split(1, SIZE, ready=0),
        "the group queued for the tainted flavor only wholly held",
        selector=K.selector("held"),
    )

    with claim("KUEUE-FLAVOR-004"):
        wrong = R.assigned_whole(R.group_workload(scenario, "tolerant", 0), names[0])
        assert wrong is None, f"the group tolerating {taint}: {wrong}"
    with claim("KUEUE-FLAVOR-004"):
        wrong = R.assigned_whole(R.group_workload(scenario, "plain", 0), names[1])
        assert wrong is None, f"the group not tolerating {taint} (first flavor {names[0]} tainted, with room): {wrong}"
    with claim("KUEUE-FLAVOR-004"):
        given = {p["metadata"]["name"]: R.tolerations_of_key(p, key) for p in R.group_pods(scenario, "plain", 0)}
        given = {k: v for k, v in given.items() if v}
        assert not given, f"Kueue added tolerations of the flavor taint {key} to the group not tolerating it: {given}"
    with claim("KUEUE-FLAVOR-004"):
        uid = K.lws_uid(scenario, "held")
        pending = K.wait_pending(scenario, uid, workloads.lws_workload_name("held", uid, 0))
        assert not (pending.get("status") or {}).get("admission"), (
            f"{pending['metadata']['name']} (tainted flavor only, no toleration) carries an admission"
        )
        escaped = scenario.observe_pods(K.leak(0), K.OBSERVE_SECONDS, selector=K.selector("held"))
        assert escaped is None, escaped


@pytest.mark.requirement("KUEUE-FUNGIBLE-001")
def test_when_can_borrow_decides_between_borrowing_and_the_next_flavor(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """Two cohorts, each a lender with quota in the first flavor and a borrower whose first flavor
    has no GPU quota of its own and whose second flavor fits the group. With whenCanBorrow left at
    its default (MayStopSearch) the group is admitted in the first flavor by borrowing; with
    TryNextFlavor it is admitted in the second, without borrowing."""
    t = lwsc_cluster.topology
    b1, b2 = R.two_blocks(scenario, lwsc_cluster)
    first = scenario.create(R.flavor(f"{unique}-a", {t.block_label: b1}))["metadata"]["name"]
    second = scenario.create(R.flavor(f"{unique}-b", {t.block_label: b2}))["metadata"]["name"]
    cases = {"stop": (None, first), "next": ({"whenCanBorrow": "TryNextFlavor"}, second)}
    for tag, (fungibility, _) in cases.items():
        cohort = f"{unique}-{tag}"
        scenario.create(
            R.cluster_queue(f"{cohort}-lend", [R.flavor_quota(first, R.quota(lwsc_cluster, 2 * SIZE))], cohort=cohort)
        )
        borrower = [
            R.flavor_quota(first, R.quota(lwsc_cluster, 0)),
            R.flavor_quota(second, R.quota(lwsc_cluster, SIZE)),
        ]
        R.queue(
            scenario, R.cluster_queue(f"{cohort}-cq", borrower, cohort=cohort, fungibility=fungibility), f"lq-{tag}"
        )
        scenario.create(R.lws(tag, lwsc_cluster, SIZE, f"lq-{tag}"))
    for tag, (fungibility, want) in cases.items():
        scenario.wait_pods(K.all_ready(1, SIZE), f"the {tag} group whole and Ready", selector=K.selector(tag))
        with claim("KUEUE-FUNGIBLE-001"):
            wrong = R.assigned_whole(R.group_workload(scenario, tag, 0), want)
            policy = (fungibility or {}).get("whenCanBorrow", "MayStopSearch (default)")
            assert wrong is None, (
                f"whenCanBorrow {policy}, first flavor {first} fits only by borrowing, second {second} "
                f"fits without: {wrong}"
            )


@pytest.mark.requirement("KUEUE-FUNGIBLE-002")
def test_when_can_preempt_decides_between_preemption_and_the_next_flavor(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """Two ClusterQueues (no cohort) with preemption within the queue for lower priority, each with
    two flavors of quota for one group; a low-priority group fills the first flavor, then a
    high-priority group arrives. With whenCanPreempt left at its default (TryNextFlavor) it is
    admitted in the second flavor and the low group is left alone (same pods); with MayStopSearch
    it preempts the low group and is admitted in the first flavor."""
    t = lwsc_cluster.topology
    b1, b2 = R.two_blocks(scenario, lwsc_cluster)
    first = scenario.create(R.flavor(f"{unique}-a", {t.block_label: b1}))["metadata"]["name"]
    second = scenario.create(R.flavor(f"{unique}-b", {t.block_label: b2}))["metadata"]["name"]
    lo, hi = f"{unique}-lo", f"{unique}-hi"
    scenario.create(workloads.workload_priority_class(lo, 100))
    scenario.create(workloads.workload_priority_class(hi, 10000))
    cases = {"next": (None, second), "stop": ({"whenCanPreempt": "MayStopSearch"}, first)}
    lows = {}
    for tag, (fungibility, _) in cases.items():
        fq = [R.flavor_quota(f, R.quota(lwsc_cluster, SIZE)) for f in (first, second)]
        cq = R.cluster_queue(
            f"{unique}-{tag}", fq, fungibility=fungibility, preemption={"withinClusterQueue": "LowerPriority"}
        )
        R.queue(scenario, cq, f"lq-{tag}")
        scenario.create(R.lws(f"low-{tag}", lwsc_cluster, SIZE, f"lq-{tag}", priority_class=lo))
    for tag in cases:
        scenario.wait_pods(K.all_ready(1, SIZE), f"low-{tag} whole and Ready", selector=K.selector(f"low-{tag}"))
        wrong = R.assigned_whole(R.group_workload(scenario, f"low-{tag}", 0), first)
        assert wrong is None, f"the low-priority group (flavors {first}, {second}, both empty): {wrong}"
        lows[tag] = R.pod_uids(scenario, f"low-{tag}")
    low_uids = {tag: K.lws_uid(scenario, f"low-{tag}") for tag in cases}
    low_wls = {tag: workloads.lws_workload_name(f"low-{tag}", low_uids[tag], 0) for tag in cases}

    def create_highs() -> None:
        for tag in cases:
            scenario.create(R.lws(f"high-{tag}", lwsc_cluster, SIZE, f"lq-{tag}", priority_class=hi))

    with claim("KUEUE-FUNGIBLE-002"):
        K.wait_workloads(  # watched from before the high groups exist: a Preempted=True however brief
            scenario,
            low_uids["stop"],
            K.act_then_wait(create_highs, _preempted(low_wls["stop"])),
            f"{low_wls['stop']} Preempted=True (whenCanPreempt MayStopSearch, {first} full of it)",
        )
    for tag, (fungibility, want) in cases.items():
        policy = (fungibility or {}).get("whenCanPreempt", "TryNextFlavor (default)")
        scenario.wait_pods(K.all_ready(1, SIZE), f"high-{tag} whole and Ready", selector=K.selector(f"high-{tag}"))
        with claim("KUEUE-FUNGIBLE-002"):
            wrong = R.assigned_whole(R.group_workload(scenario, f"high-{tag}", 0), want)
            assert wrong is None, (
                f"whenCanPreempt {policy}, first flavor {first} full of a lower-priority group, second {second} "
                f"empty: {wrong}"
            )
    with claim("KUEUE-FUNGIBLE-002"):
        wl = K.by_name(K.workloads_of(scenario, low_uids["next"])).get(low_wls["next"], {})
        kept = R.pod_uids(scenario, "low-next") == lows["next"]
        assert kept and not R.was_preempted(wl), (
            f"whenCanPreempt TryNextFlavor (default) with room in {second}: the low-priority group was preempted "
            f"(Preempted={P.condition(wl, 'Preempted') if wl else 'its Workload gone'}, pods kept: {kept})"
        )
    with claim("KUEUE-FUNGIBLE-002"):
        assert not (R.pod_uids(scenario, "low-stop") & lows["stop"]), "the preempted low group kept pods"


@pytest.mark.requirement("KUEUE-FUNGIBLE-003")
def test_preference_orders_borrowing_against_preemption(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """Both policies TryNextFlavor. In each of two cohorts a borrower's first flavor is full of its
    own lower-priority group (fits by preemption, no borrowing) and its second flavor has no GPU
    quota of its own while a lender in the cohort has room there (fits by borrowing, no
    preemption). preference BorrowingOverPreemption admits the high group in the second flavor and
    leaves the low group alone; PreemptionOverBorrowing preempts the low group and admits the high
    group in the first flavor."""
    t = lwsc_cluster.topology
    b1, b2 = R.two_blocks(scenario, lwsc_cluster)
    first = scenario.create(R.flavor(f"{unique}-a", {t.block_label: b1}))["metadata"]["name"]
    second = scenario.create(R.flavor(f"{unique}-b", {t.block_label: b2}))["metadata"]["name"]
    lo, hi = f"{unique}-lo", f"{unique}-hi"
    scenario.create(workloads.workload_priority_class(lo, 100))
    scenario.create(workloads.workload_priority_class(hi, 10000))
    cases = {"borrow": ("BorrowingOverPreemption", second), "preempt": ("PreemptionOverBorrowing", first)}
    lows: dict[str, set[str]] = {}
    for tag, (preference, _) in cases.items():
        cohort = f"{unique}-{tag}"
        scenario.create(
            R.cluster_queue(f"{cohort}-lend", [R.flavor_quota(second, R.quota(lwsc_cluster, 2 * SIZE))], cohort=cohort)
        )
        fq = [R.flavor_quota(first, R.quota(lwsc_cluster, SIZE)), R.flavor_quota(second, R.quota(lwsc_cluster, 0))]
        fungibility = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor", "preference": preference}
        cq = R.cluster_queue(
            f"{cohort}-cq",
            fq,
            cohort=cohort,
            fungibility=fungibility,
            preemption={"withinClusterQueue": "LowerPriority"},
        )
        R.queue(scenario, cq, f"lq-{tag}")
        scenario.create(R.lws(f"low-{tag}", lwsc_cluster, SIZE, f"lq-{tag}", priority_class=lo))
    for tag in cases:
        scenario.wait_pods(K.all_ready(1, SIZE), f"low-{tag} whole and Ready", selector=K.selector(f"low-{tag}"))
        wrong = R.assigned_whole(R.group_workload(scenario, f"low-{tag}", 0), first)
        assert wrong is None, f"the low-priority group (its own quota in {first} only): {wrong}"
        lows[tag] = R.pod_uids(scenario, f"low-{tag}")
    victim_uid = K.lws_uid(scenario, "low-preempt")
    victim = workloads.lws_workload_name("low-preempt", victim_uid, 0)

    def create_highs() -> None:
        for tag in cases:
            scenario.create(R.lws(f"high-{tag}", lwsc_cluster, SIZE, f"lq-{tag}", priority_class=hi))

    with claim("KUEUE-FUNGIBLE-003"):
        K.wait_workloads(  # watched from before the high groups exist: a Preempted=True however brief
            scenario,
            victim_uid,
            K.act_then_wait(create_highs, _preempted(victim)),
            f"{victim} Preempted=True (preference PreemptionOverBorrowing, {first} full of it)",
        )
    for tag, (preference, want) in cases.items():
        scenario.wait_pods(K.all_ready(1, SIZE), f"high-{tag} whole and Ready", selector=K.selector(f"high-{tag}"))
        with claim("KUEUE-FUNGIBLE-003"):
            wrong = R.assigned_whole(R.group_workload(scenario, f"high-{tag}", 0), want)
            assert wrong is None, (
                f"preference {preference}, {first} fits by preempting a lower-priority group, {second} by "
                f"borrowing: {wrong}"
            )
    low_uid = K.lws_uid(scenario, "low-borrow")
    low_wl = workloads.lws_workload_name("low-borrow", low_uid, 0)
    with claim("KUEUE-FUNGIBLE-003"):
        wl = K.by_name(K.workloads_of(scenario, low_uid)).get(low_wl, {})
        kept = R.pod_uids(scenario, "low-borrow") == lows["borrow"]
        assert kept and wl and not R.was_preempted(wl), (
            f"preference BorrowingOverPreemption with room to borrow in {second}: the low-priority group was "
            f"preempted (Workload present: {bool(wl)}, pods kept: {kept})"
        )
    with claim("KUEUE-FUNGIBLE-003"):
        assert not (R.pod_uids(scenario, "low-preempt") & lows["preempt"]), "the preempted low group kept pods"
