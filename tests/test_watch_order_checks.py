"""The watch-order checks of the suites (lws_conformance.observe.history): each
passes a stream shaped like what LWS v0.9.0 / Kueue v0.17.0 write, and fails the stream a
misbehaving controller would write. Streams go through the timeline's real `snapshot()`, so a
change of the recorded format breaks these tests, not the suites silently."""

from __future__ import annotations

from typing import Any

from lws_conformance.k8s import predicates as P
from lws_conformance.observe import history as H
from lws_conformance.observe.timeline import Event, snapshot

Obj = dict[str, Any]
LBL = "leaderworkerset.sigs.k8s.io/"


class Stream:
    """Ordered events; resourceVersion = position. `initial()` marks what follows as the
    recording's initial list until `watch()`."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.source = "watch"

    def initial(self) -> Stream:
        self.source = "list"
        return self

    def watch(self) -> Stream:
        self.source = "watch"
        return self

    def add(self, kind: str, raw: Obj, etype: str = "MODIFIED") -> Stream:
        n = len(self.events) + 1
        raw = {**raw, "metadata": {**raw["metadata"], "resourceVersion": str(n)}}
        self.events.append(Event(n - 1, n * 0.01, 0.0, kind, etype, snapshot(kind, raw), self.source))
        return self

    def pod(self, name: str, group: int, worker: int, *, etype: str = "MODIFIED", lws: str = "l", **kw: Any) -> Stream:
        return self.add("Pod", pod(name, group, worker, lws=lws, **kw), etype)

    def lws(self, name: str, conds: dict[str, str], etype: str = "MODIFIED") -> Stream:
        status = {"conditions": [{"type": t, "status": s} for t, s in conds.items()]}
        return self.add(
            "LeaderWorkerSet", {"metadata": {"name": name, "uid": "u"}, "spec": {}, "status": status}, etype
        )

    def workload(self, name: str, conds: dict[str, str], etype: str = "MODIFIED") -> Stream:
        status = {"conditions": [{"type": t, "status": s} for t, s in conds.items()]}
        return self.add("Workload", {"metadata": {"name": name, "uid": "w-" + name}, "status": status}, etype)

    def sts(self, name: str, etype: str = "ADDED") -> Stream:
        return self.add(
            "StatefulSet", {"metadata": {"name": name, "uid": "s-" + name}, "spec": {}, "status": {}}, etype
        )


def pod(
    name: str,
    group: int,
    worker: int,
    *,
    lws: str = "l",
    ready: bool = True,
    gated: bool = False,
    phase: str | None = None,
    deleting: bool = False,
    uid: str | None = None,
) -> Obj:
    meta: Obj = {
        "name": name,
        "uid": uid or "u-" + name,
        "labels": {LBL + "name": lws, LBL + "group-index": str(group), LBL + "worker-index": str(worker)},
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    phase = phase or ("Running" if ready else "Pending")
    spec: Obj = {"schedulingGates": [{"name": P.ADMISSION_GATE}]} if gated else {}
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"metadata": meta, "spec": spec, "status": status}


# -- LWS-STATUS-001: Progressing before Available, in write order -----------------------------


def test_progressing_then_available_in_write_order() -> None:
    s = Stream().lws("st", {}, "ADDED").lws("st", {"Progressing": "True"})
    s.lws("st", {"Progressing": "True"}).lws("st", {"Progressing": "False", "Available": "True"})
    history = H.lws_condition_history(s.events, "st")
    assert history == [{}, {"Progressing": "True"}, {"Progressing": "False", "Available": "True"}]
    assert H.progressing_then_available(history) == []


def test_available_first_or_without_flip_fails() -> None:
    """Mutant: the controller writes Available straight away (or within the same second as
    Progressing, which 1 s event timestamps could not order) / does not flip Progressing."""
    straight = H.lws_condition_history(Stream().lws("st", {"Available": "True"}, "ADDED").events, "st")
    assert any("first conditions" in v for v in H.progressing_then_available(straight))
    reversed_ = Stream().lws("st", {"Available": "True"}).lws("st", {"Available": "False", "Progressing": "True"})
    assert H.progressing_then_available(H.lws_condition_history(reversed_.events, "st"))
    no_flip = Stream().lws("st", {"Progressing": "True"}).lws("st", {"Progressing": "True", "Available": "True"})
    out = H.progressing_then_available(H.lws_condition_history(no_flip.events, "st"))
    assert any("not False" in v for v in out) and any("both True" in v for v in out)
    never = Stream().lws("st", {"Progressing": "True"})
    assert any("never written" in v for v in H.progressing_then_available(H.lws_condition_history(never.events, "st")))
    upd = Stream().lws("st", {"Progressing": "True", "UpdateInProgress": "True"})
    upd.lws("st", {"Progressing": "False", "Available": "True", "UpdateInProgress": "False"})
    assert any("UpdateInProgress" in v for v in H.progressing_then_available(H.lws_condition_history(upd.events, "st")))


# -- LWS-STARTUP-002: nothing of the workers before the leader is Ready ------------------------


def _leader_ready_stream(sts_first: bool) -> Stream:
    s = Stream().pod("lr-0", 0, 0, etype="ADDED", lws="lr", ready=False)
    if sts_first:
        s.sts("lr-0")
    s.pod("lr-0", 0, 0, lws="lr", ready=True)
    if not sts_first:
        s.sts("lr-0")
    return s.pod("lr-0-1", 0, 1, etype="ADDED", lws="lr", ready=False).pod("lr-0-1", 0, 1, lws="lr")


def test_workers_after_leader_ready() -> None:
    assert H.workers_before_leader_ready(_leader_ready_stream(sts_first=False).events, "lr", 0) == []


def test_worker_statefulset_before_leader_ready_fails() -> None:
    """Mutant: pod controller ignores LeaderReady (creates the worker StatefulSet for a leader
    that is not Ready yet); here one write before the Ready one, which timestamps cannot show."""
    out = H.workers_before_leader_ready(_leader_ready_stream(sts_first=True).events, "lr", 0)
    assert len(out) == 1 and "StatefulSet/lr-0" in out[0], out
    early_pod = Stream().pod("lr-0-1", 0, 1, etype="ADDED", lws="lr", ready=False).pod("lr-0", 0, 0, lws="lr")
    out = H.workers_before_leader_ready(early_pod.sts("lr-0").events, "lr", 0)
    assert len(out) == 1 and "Pod/lr-0-1" in out[0], out
    never = Stream().pod("lr-0", 0, 0, lws="lr", ready=False)
    assert H.workers_before_leader_ready(never.events, "lr", 0) == ["worker StatefulSet lr-0 was never created"]


# -- KUEUE-SCALE-001: the new groups gated until admitted --------------------------------------


def _scale_stream(ungate_first: bool) -> Stream:
    s = Stream().initial().pod("up-0", 0, 0, lws="up").workload("wl-0", {"Admitted": "True"}).watch()
    s.workload("wl-1", {}, "ADDED")
    s.pod("up-1", 1, 0, etype="ADDED", lws="up", gated=True, ready=False)
    s.pod("up-1-1", 1, 1, etype="ADDED", lws="up", gated=True, ready=False)
    if ungate_first:
        s.pod("up-1", 1, 0, lws="up", ready=False)
    s.workload("wl-1", {"QuotaReserved": "True", "Admitted": "True"})
    s.pod("up-1", 1, 0, lws="up", ready=False).pod("up-1-1", 1, 1, lws="up", ready=False)
    return s.pod("up-1", 1, 0, lws="up").pod("up-1-1", 1, 1, lws="up")


def test_new_group_gated_until_admitted() -> None:
    assert H.released_before_admission(_scale_stream(False).events, "up", [1], lambda g: f"wl-{g}") == []


def test_new_group_released_early_or_created_ungated_fails() -> None:
    """Mutants: Kueue ungates a group's pods before its Workload is admitted; the pod webhook
    does not gate the pods of groups added by a scale-up."""
    out = H.released_before_admission(_scale_stream(True).events, "up", [1], lambda g: f"wl-{g}")
    assert len(out) == 1 and "up-1 of group 1 ungated" in out[0], out
    ungated = Stream().pod("up-1", 1, 0, etype="ADDED", lws="up", ready=False)
    ungated.workload("wl-1", {"Admitted": "True"})
    out = H.released_before_admission(ungated.events, "up", [1], lambda g: f"wl-{g}")
    assert any("without a scheduling gate" in v for v in out) and any("before Workload" in v for v in out), out
    assert H.released_before_admission(Stream().events, "up", [2], lambda g: f"wl-{g}") == [
        "no pod of group 2 was seen"
    ]


# -- KUEUE-UPDATE-001: released pods and reserved Workloads within quota, at every event -------


def _cost_of_wl(_: Obj) -> int:
    return 2


def _wl_of_pod(p: Obj) -> str:
    labels = p.get("labels") or {}
    return f"{labels[LBL + 'name']}-{labels[LBL + 'group-index']}"


def _rollout(waiter_released: bool = False, waiter_admitted: bool = False, early_ungate: bool = False) -> Stream:
    """ru: 2 groups x 2 pods under quota 4; wt: 1 group x 2 pods waiting. Group 1 of ru is rolled:
    its pods deleted (terminating first) and recreated behind the gate, released under its Workload."""
    s = Stream().initial()
    for g in (0, 1):
        s.workload(f"ru-{g}", {"QuotaReserved": "True", "Admitted": "True"})
        s.pod(f"ru-{g}", g, 0, lws="ru").pod(f"ru-{g}-1", g, 1, lws="ru")
    s.workload("wt-0", {"QuotaReserved": "False"})
    s.pod("wt-0", 0, 0, lws="wt", gated=True, ready=False).pod("wt-0-1", 0, 1, lws="wt", gated=True, ready=False)
    s.watch()
    s.pod("ru-1", 1, 0, lws="ru", deleting=True).pod("ru-1", 1, 0, etype="DELETED", lws="ru", deleting=True)
    s.pod("ru-1", 1, 0, etype="ADDED", lws="ru", gated=True, ready=False, uid="new")
    if early_ungate:
        s.workload("ru-1", {"QuotaReserved": "False", "Admitted": "False"})
    s.pod("ru-1", 1, 0, lws="ru", ready=False, uid="new").pod("ru-1", 1, 0, lws="ru", uid="new")
    if waiter_admitted:
        s.workload("wt-0", {"QuotaReserved": "True", "Admitted": "True"})
    if waiter_released:
        s.pod("wt-0", 0, 0, lws="wt", ready=False)
    return s


def _quota(s: Stream) -> list[str]:
    return H.quota_violations(s.events, 4, lambda p: 1, _cost_of_wl, _wl_of_pod)


def test_rollout_within_quota() -> None:
    assert _quota(_rollout()) == []


def test_over_admission_during_rollout_fails() -> None:
    """Mutants: the waiting group's pods ungated without admission (pods over quota); Kueue
    admits the waiting Workload while both groups still hold quota (reservations over quota);
    a recreated pod released while its group's Workload lost its quota."""
    out = _quota(_rollout(waiter_released=True))
    assert any("released pods request 5 > quota 4" in v for v in out), out
    assert any("wt-0 released while its Workload wt-0 holds no quota" in v for v in out), out
    out = _quota(_rollout(waiter_admitted=True))
    assert out and "QuotaReserved Workloads need 6 > quota 4" in out[0], out
    out = _quota(_rollout(early_ungate=True))
    assert out and "released while its Workload ru-1 holds no quota" in out[0], out


def test_terminating_pods_still_count() -> None:
    """A terminating pod is on its node until it is gone: counted, unlike a Failed one (a weak
    check left terminating pods out, so a replacement released early was never seen)."""

    def stream(old_phase: str) -> Stream:
        s = Stream().initial().workload("a-0", {"QuotaReserved": "True"}).workload("b-0", {"QuotaReserved": "True"})
        s.watch().pod("a-0", 0, 0, lws="a", deleting=True, phase=old_phase, ready=False)
        return s.pod("b-0", 0, 0, lws="b").pod("b-0-1", 0, 1, lws="b")

    out = H.quota_violations(stream("Running").events, 2, lambda p: 1, lambda w: 1, _wl_of_pod)
    assert out == ["MODIFIED Pod/b-0-1 rv 5: released pods request 3 > quota 2: a-0 b-0 b-0-1"], out
    assert H.quota_violations(stream("Failed").events, 2, lambda p: 1, lambda w: 1, _wl_of_pod) == []


# -- CHAOS-EXP-003: the admitted group untouched through the Kueue outage ----------------------


def _outage(disturb: str | None = None) -> Stream:
    s = Stream().initial()
    for g in (0, 1):
        s.workload(f"wl-{g}", {"QuotaReserved": "True", "Admitted": "True"})
        for w in range(3):
            s.pod(f"c-{g}" + (f"-{w}" if w else ""), g, w, lws="c")
    s.watch()
    s.pod("c-0-1", 0, 1, lws="c", deleting=True).pod("c-0", 0, 0, lws="c", deleting=True)  # the restarted group
    if disturb == "evicted":
        s.workload("wl-1", {"QuotaReserved": "False", "Admitted": "False", "Evicted": "True"})
    elif disturb == "replaced":
        s.pod("c-1-2", 1, 2, etype="DELETED", lws="c").pod("c-1-2", 1, 2, etype="ADDED", lws="c", uid="x")
    elif disturb == "unready":
        s.pod("c-1", 1, 0, lws="c", ready=False)
    s.pod("c-0", 0, 0, etype="ADDED", lws="c", gated=True, ready=False, uid="n0")
    return s


def test_admitted_group_untouched() -> None:
    assert H.group_disturbances(_outage().events, "c", 1, 3, "wl-1") == []


def test_disturbed_admitted_group_fails() -> None:
    """Mutants: Kueue on restart evicts (re-queues) admitted Workloads it finds without a
    running controller's cache; a pod of the admitted group replaced; a pod made not Ready."""
    out = H.group_disturbances(_outage("evicted").events, "c", 1, 3, "wl-1")
    assert len(out) == 1 and "not Admitted" in out[0] and "Evicted" in out[0], out
    out = H.group_disturbances(_outage("replaced").events, "c", 1, 3, "wl-1")
    assert any("deleted" in v for v in out) and any("a new pod" in v for v in out), out
    out = H.group_disturbances(_outage("unready").events, "c", 1, 3, "wl-1")
    assert len(out) == 1 and "not Ready" in out[0], out
    out = H.group_disturbances(_outage().events, "c", 0, 3, "wl-0")
    assert any("deleting" in v for v in out), out
    assert any("not whole" in v for v in H.group_disturbances(Stream().events, "c", 1, 3, "wl-1"))


# -- LWS-UPGRADE-001: an in-place controller upgrade leaves the LWS alone --------------------


def _upgrade_start() -> Stream:
    s = Stream().initial().lws("l", {"Available": "True"}, "ADDED")
    s.pod("l-0", 0, 0, etype="ADDED").pod("l-0-1", 0, 1, etype="ADDED")
    lbl = {LBL + "name": "l", LBL + "template-revision-hash": "r1"}
    s.add("StatefulSet", {"metadata": {"name": "l", "uid": "s", "labels": lbl}, "spec": {"replicas": 1}}, "ADDED")
    return s.watch()


def test_upgrade_that_only_rewrites_status_is_undisturbed() -> None:
    s = _upgrade_start().lws("l", {"Available": "True", "Progressing": "False"}).pod("l-0", 0, 0)
    assert H.upgrade_disturbances(s.events, "l") == []


def test_upgrade_that_recreates_a_pod_or_rolls_is_caught() -> None:
    """Mutants lws-34/35: the new controller rolls the groups it finds."""
    recreated = _upgrade_start().pod("l-0", 0, 0, deleting=True).pod("l-0", 0, 0, uid="new", ready=False)
    found = H.upgrade_disturbances(recreated.events, "l")
    assert any("deleting" in f for f in found) and any("became" in f for f in found), found
    rolling = _upgrade_start().lws("l", {"Available": "True", "UpdateInProgress": "True"})
    assert any("UpdateInProgress" in f for f in H.upgrade_disturbances(rolling.events, "l"))
    lbl = {LBL + "name": "l", LBL + "template-revision-hash": "r2"}
    relabelled = _upgrade_start().add(
        "StatefulSet", {"metadata": {"name": "l", "uid": "s", "labels": lbl}, "spec": {"replicas": 1}}
    )
    assert any("became" in f for f in H.upgrade_disturbances(relabelled.events, "l"))


def _kueue_upgrade_start() -> Stream:
    """Group 0 admitted and Ready, group 1 held at the gate, as the recording starts."""
    s = Stream().initial()
    s.pod("l-0", 0, 0, etype="ADDED").pod("l-0-1", 0, 1, etype="ADDED")
    for name, worker in (("l-1", 0), ("l-1-1", 1)):
        s.pod(name, 1, worker, etype="ADDED", ready=False, gated=True)
    s.workload("w0", {"QuotaReserved": "True", "Admitted": "True"}, etype="ADDED")
    s.workload("w1", {"QuotaReserved": "False"}, etype="ADDED")
    return s.watch()


def test_kueue_upgrade_that_changes_nothing_passes() -> None:
    s = _kueue_upgrade_start().pod("l-0", 0, 0).workload("w0", {"QuotaReserved": "True", "Admitted": "True"})
    assert H.kueue_upgrade_disturbances(s.events, "l") == []


def test_kueue_upgrade_that_first_records_pods_ready_as_it_was_passes() -> None:
    """Kueue v0.19 tracks PodsReady by default: on its first reconcile it sets PodsReady True on
    the admitted Workload and False on the held one, which changes nothing that held."""
    s = _kueue_upgrade_start()
    s.workload("w0", {"QuotaReserved": "True", "Admitted": "True", "PodsReady": "True"})
    s.workload("w1", {"QuotaReserved": "False", "PodsReady": "False"})
    assert H.kueue_upgrade_disturbances(s.events, "l") == []


def test_kueue_upgrade_that_first_records_the_held_workload_not_admitted_passes() -> None:
    """Kueue main writes Admitted False, then PodsReady False, on the held Workload at its first
    reconcile (recorded 2026-12-03, v0.17.0 -> v0.20.0-devel+main.377@ff69552)."""
    s = _kueue_upgrade_start().workload("w1", {"QuotaReserved": "False", "Admitted": "False"})
    s.workload("w1", {"QuotaReserved": "False", "Admitted": "False", "PodsReady": "False"})
    assert H.kueue_upgrade_disturbances(s.events, "l") == []


def test_kueue_upgrade_that_admits_the_held_workload_or_unadmits_the_admitted_one_is_caught() -> None:
    admitted = _kueue_upgrade_start().workload("w1", {"QuotaReserved": "False", "Admitted": "True"})
    assert any("Workload/w1 " in f and "became" in f for f in H.kueue_upgrade_disturbances(admitted.events, "l"))
    dropped = _kueue_upgrade_start().workload("w0", {"QuotaReserved": "True", "Admitted": "False"})
    assert any("Workload/w0 " in f and "became" in f for f in H.kueue_upgrade_disturbances(dropped.events, "l"))


def test_kueue_upgrade_whose_first_pods_ready_disagrees_or_which_flips_it_is_caught() -> None:
    wrong = _kueue_upgrade_start().workload("w0", {"QuotaReserved": "True", "Admitted": "True", "PodsReady": "False"})
    assert any("Workload/w0 " in f and "became" in f for f in H.kueue_upgrade_disturbances(wrong.events, "l"))
    held = _kueue_upgrade_start().workload("w1", {"QuotaReserved": "False", "PodsReady": "True"})
    assert any("Workload/w1 " in f for f in H.kueue_upgrade_disturbances(held.events, "l"))
    flipped = _kueue_upgrade_start().workload("w0", {"QuotaReserved": "True", "Admitted": "True", "PodsReady": "True"})
    flipped.workload("w0", {"QuotaReserved": "True", "Admitted": "True", "PodsReady": "False"})
    assert any(
        f.endswith("'False') (uid, QuotaReserved, Admitted, Evicted, PodsReady)")
        for f in H.kueue_upgrade_disturbances(flipped.events, "l")
    )


def test_kueue_upgrade_that_evicts_ungates_or_renames_is_caught() -> None:
    """Mutant kueue-30: the upgraded Kueue names Workloads differently and makes new ones."""
    evicted = _kueue_upgrade_start().workload("w0", {"QuotaReserved": "False", "Admitted": "False", "Evicted": "True"})
    assert any("became" in f and "Evicted" in f for f in H.kueue_upgrade_disturbances(evicted.events, "l"))
    ungated = _kueue_upgrade_start().pod("l-1", 1, 0, ready=False)
    assert any("Pod/l-1 " in f and "became" in f for f in H.kueue_upgrade_disturbances(ungated.events, "l"))
    renamed = _kueue_upgrade_start().workload("w0-new", {"QuotaReserved": "False"}, etype="ADDED")
    assert H.kueue_upgrade_disturbances(renamed.events, "l") == ["ADDED Workload/w0-new rv 7: a new Workload"]
    gone = _kueue_upgrade_start().workload("w1", {}, etype="DELETED")
    assert any("deleted" in f for f in H.kueue_upgrade_disturbances(gone.events, "l"))
    assert H.kueue_upgrade_disturbances(Stream().events, "l") == [
        "LWS l's pods and Workloads were not there when the recording started"
    ]


def test_pods_disturbed_names_deletion_replacement_and_unready() -> None:
    s = Stream().initial().pod("a", 2, 0, etype="ADDED").pod("b", 2, 1, etype="ADDED").watch()
    assert H.pods_disturbed(s.pod("a", 2, 0).events, ["a", "b"]) == []
    bad = Stream().initial().pod("a", 2, 0, etype="ADDED").watch().pod("a", 2, 0, ready=False)
    assert [f.split(": ")[-1] for f in H.pods_disturbed(bad.events, ["a"])] == ["not Ready"]
    gone = Stream().initial().pod("a", 2, 0, etype="ADDED").watch().pod("a", 2, 0, etype="DELETED", deleting=True)
    assert "deleted, deleting" in H.pods_disturbed(gone.events, ["a"])[0]
    assert H.pods_disturbed(Stream().events, ["a"]) == ["pod a was not there when the recording started"]


# -- CHAOS-RESTART-011: a leader deleted once is replaced once -----------------------------------


def _replaced(*tail: tuple[str, str, bool]) -> Stream:
    """Leader rb-1 (uid old) in the initial list, deleted, then each (etype, uid, deleting) of `tail`."""
    s = Stream().initial().pod("rb-1", 1, 0, etype="ADDED", lws="rb", uid="old").watch()
    s.pod("rb-1", 1, 0, lws="rb", uid="old", deleting=True).pod("rb-1", 1, 0, etype="DELETED", lws="rb", uid="old")
    for etype, uid, deleting in tail:
        s.pod("rb-1", 1, 0, etype=etype, lws="rb", uid=uid, deleting=deleting, ready=etype != "ADDED")
    return s


def test_a_leader_replaced_once_passes() -> None:
    s = _replaced(("ADDED", "new", False), ("MODIFIED", "new", False))
    assert H.replaced_more_than_once(s.events, "rb-1") == []


def test_a_replacement_deleted_again_or_replaced_twice_fails() -> None:
    """kubernetes-sigs/lws#805 put back: an old worker's background deletion makes LWS delete the
    new leader (foreground); caught while the deletion is under way and once the third leader exists."""
    deleting = _replaced(("ADDED", "new", False), ("MODIFIED", "new", True))
    assert H.replaced_more_than_once(deleting.events, "rb-1") == [
        "MODIFIED Pod/rb-1 rv 5: its replacement (uid new) deleted again"
    ]
    twice = _replaced(("ADDED", "new", False), ("MODIFIED", "new", True), ("DELETED", "new", True))
    twice.pod("rb-1", 1, 0, etype="ADDED", lws="rb", uid="third", ready=False)
    out = H.replaced_more_than_once(twice.events, "rb-1")
    assert out[1:] == ["pod rb-1 replaced 2 times (uids old -> new -> third)"] and "deleted again" in out[0], out


def test_a_leader_never_replaced_or_not_there_says_so() -> None:
    kept = Stream().initial().pod("rb-1", 1, 0, etype="ADDED", lws="rb", uid="old").watch()
    assert H.replaced_more_than_once(kept.pod("rb-1", 1, 0, lws="rb", uid="old").events, "rb-1") == [
        "pod rb-1 was never replaced (uid old throughout)"
    ]
    assert H.replaced_more_than_once(Stream().events, "rb-1") == ["pod rb-1 was not there when the recording started"]


# -- ROLL-SINGLE-001: downtime is cut by write order, not arrival time -------------------------


def test_downtime_ignores_writes_from_before_the_update_that_arrive_late() -> None:
    """Recorded here: the group's worker turned Ready at rv 24292 (a write from the creation),
    arriving 14 ms after rv 24299; cutting by arrival time counted 2 ms of 'downtime' there."""
    from pathlib import Path

    from lws_conformance.observe.timeline import Timeline

    events = Timeline.load(Path(__file__).parent / "data" / "single-replica-mu0-late-arrival.timeline.json").ordered()
    from lws_conformance.observe import facts

    assert facts.downtime(events, 24299) == (1, 0.0)
    t_cut = next(e.t for e in events if e.rv == "24299")
    late = [e for e in events if int(e.rv) < 24299 and e.t > t_cut]
    assert late, "the recording no longer shows a write arriving after a later one"
