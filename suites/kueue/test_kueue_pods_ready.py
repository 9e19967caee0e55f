"""Kueue's waitForPodsReady with LWS groups: a group whose pods are not all Ready in time is
evicted whole and requeued (docs/tasks/manage/setup_wait_for_pods_ready.md@v0.17.0), and from
Kueue v0.19 waitForPodsReady is on without any configuration (CHANGELOG-0.19.md, kueue PR 11855).

The eviction test needs a short timeout, so it runs on a private cluster of its own whose Kueue
configuration sets `waitForPodsReady.timeout` (and a short requeuing backoff); the group's leader
runs and turns Ready, its worker selects a node label no node has, so the group can never be
whole. The group runs under restartPolicy None, so LWS never deletes the leader when Kueue
deletes the worker: the leader's deletion is Kueue's own. The default-on test runs on the shared
cluster, whose Kueue configuration leaves waitForPodsReady out.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario, scaled_seconds, workloads
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
# The private cluster's waitForPodsReady: the timeout leaves the leader time to turn Ready first
# (scaled with timeouts.scale, as the harness's own steps slow down with the machine).
TIMEOUT_SECONDS, BACKOFF_SECONDS = round(scaled_seconds(10)), 2
NOWHERE = {"lwsc.test/no-such-node": "true"}


def _condition(wl: Obj, ctype: str) -> Obj:
    return next((c for c in (wl.get("status") or {}).get("conditions") or [] if c["type"] == ctype), {})


def _at(cond: Obj) -> datetime:
    return datetime.fromisoformat(cond["lastTransitionTime"].replace("Z", "+00:00"))


def _quota() -> dict[str, str]:
    return {"cpu": "10", "memory": "10Gi"}


class _History:
    """What one Workload went through, from every state the watch shows: admitted, evicted for
    PodsReadyTimeout, its quota released after that, admitted again after that."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.admitted: Obj | None = None  # the first Admitted=True condition
        self.evicted: Obj | None = None  # the first Evicted=True condition
        self.released = False  # QuotaReserved not True after the eviction
        self.readmitted: Obj | None = None  # the Workload admitted again after the release

    def see(self, wls: list[Obj]) -> Obj | None:
        wl = K.by_name(wls).get(self.name)
        if wl is None:
            return None
        admitted, evicted = _condition(wl, "Admitted"), _condition(wl, "Evicted")
        if self.admitted is None and admitted.get("status") == "True":
            self.admitted = admitted
        if self.evicted is None and evicted.get("status") == "True":
            self.evicted = evicted
        if self.evicted is not None and not self.released and P.condition(wl, "QuotaReserved") != "True":
            self.released = True
        if self.released and self.readmitted is None and admitted.get("status") == "True":
            self.readmitted = wl
        return self.readmitted


@pytest.mark.private_cluster(
    f"kueue.pods_ready_timeout_seconds={TIMEOUT_SECONDS}", f"kueue.pods_ready_backoff_base_seconds={BACKOFF_SECONDS}"
)
@pytest.mark.requirement("KUEUE-PODSREADY-001")
@pytest.mark.requirement("KUEUE-PODSREADY-002")
def test_a_group_not_ready_in_time_is_evicted_whole_and_requeued(
    private_scenario: Scenario, unique: str, claim: Claims
) -> None:
    """One group of 2 under restartPolicy None: the leader Ready, the worker unschedulable. After
    the 10 s timeout (times timeouts.scale; not before) the group's Workload is Evicted for
    PodsReadyTimeout with its quota released, and both pods it ran are deleted (the Ready leader
    too); it is requeued (requeueState.count 1) and admitted again in the same ClusterQueue once
    the 2 s backoff has passed."""
    sc = private_scenario
    K.plain_queue(sc, unique, _quota())
    obj = workloads.lws("late", replicas=1, size=2, queue=K.QUEUE)
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["nodeSelector"] = NOWHERE
    # LWS's default policy would recreate the group once Kueue deletes the worker, hiding whether
    # Kueue stopped the Ready leader itself
    obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"
    sc.create(obj)
    first = sc.wait_pods(
        lambda pods: pods if len(pods) == 2 and any(map(P.pod_ready, pods)) else None,
        "the leader Ready, the worker created (it can never be scheduled)",
        selector=K.selector("late"),
    )
    uid = K.lws_uid(sc, "late")
    name = workloads.lws_workload_name("late", uid, 0)
    seen = K.wait_workloads(sc, uid, lambda wls: K.by_name(wls).get(name), f"{name} created")
    if _condition(seen, "Evicted") or (seen.get("status") or {}).get("requeueState"):
        # not a verdict: the eviction to check happened before the pods it must delete were known
        raise RuntimeError(
            f"{name} was evicted before its leader was seen Ready ({P.condition(seen, 'Evicted')}); "
            f"the harness was slower than the {TIMEOUT_SECONDS} s timeout: raise timeouts.scale"
        )
    history = _History(name)
    K.wait_workloads(
        sc,
        uid,
        history.see,
        f"{name} evicted, its quota released, then admitted again",
        timeout=TIMEOUT_SECONDS + 4 * BACKOFF_SECONDS + 60,
    )
    assert history.admitted and history.evicted and history.readmitted, vars(history)
    with claim("KUEUE-PODSREADY-001"):
        assert history.evicted.get("reason") == "PodsReadyTimeout", f"{name} evicted with {history.evicted}"
        waited = (_at(history.evicted) - _at(history.admitted)).total_seconds()
        # condition times have a resolution of one second
        assert waited >= TIMEOUT_SECONDS - 1, f"{name} evicted {waited:.0f} s after its admission, " \
            f"before the {TIMEOUT_SECONDS} s waitForPodsReady timeout"  # fmt: skip
        originals = {p["metadata"]["uid"]: p["metadata"]["name"] for p in first}
        sc.wait_pods(
            lambda pods: not {p["metadata"]["uid"] for p in pods} & set(originals) or None,
            f"every pod the evicted group ran deleted: {sorted(originals.values())}",
            selector=K.selector("late"),
        )
    with claim("KUEUE-PODSREADY-002"):
        again = history.readmitted
        count = ((again.get("status") or {}).get("requeueState") or {}).get("count")
        assert count == 1, f"{name} admitted again with requeueState {again['status'].get('requeueState')}"
        queue = ((again.get("status") or {}).get("admission") or {}).get("clusterQueue")
        assert queue == f"{unique}-cq", f"{name} admitted again in ClusterQueue {queue!r}, not {unique}-cq"


@pytest.mark.requirement("KUEUE-PODSREADY-003")
def test_pods_ready_is_tracked_without_configuration(scenario: Scenario, unique: str) -> None:
    """The shared cluster's Kueue configuration has no waitForPodsReady: an admitted group of 2
    whose pods all turn Ready gets PodsReady=True on its Workload (Kueue sets the condition only
    while waitForPodsReady is on)."""
    K.plain_queue(scenario, unique, _quota())
    scenario.create(workloads.lws("ready", replicas=1, size=2, queue=K.QUEUE))
    scenario.wait_pods(K.all_ready(1, 2), "both pods of the group Ready", selector=K.selector("ready"))
    uid = K.lws_uid(scenario, "ready")
    name = workloads.lws_workload_name("ready", uid, 0)
    K.wait_workloads(
        scenario,
        uid,
        lambda wls: (wl := K.by_name(wls).get(name)) and P.condition(wl, "PodsReady") == "True" and wl,
        f"{name} with PodsReady=True (Kueue tracks readiness without a waitForPodsReady configuration)",
    )
